"""Benchmark of the message sequence chart's SVG: a 10,000-event multi-agent session.

Run from the repository root::

    .venv/bin/python -m bench.msc_svg                  # 10,000 events, best of 5
    .venv/bin/python -m bench.msc_svg --events 50000   # another size
    .venv/bin/python -m bench.msc_svg --profile        # cProfile of one render

The session is generated, seeded, before any timer starts: 6 agents (lifelines); each event is a
local action, a send to a random other agent (four in five delivered, later, to that agent; the
rest stay in transit), or - now and then - a choice that evaluates one CPL guard; every event
has an output text of 40-200 characters, some with markup to escape.  One rule's verdicts
change at a few hundred steps.  The chart input is built as the page builds it (``build_msc``,
guard decisions from ``run_monitor``, texts); the timed part is ``render_svg`` alone, which is
what the goal is about (goal: under one second), with and without a selected event (whose causal
past is then marked).  ``build_msc``, the guard monitor and the events table (``render_table``)
are timed too, for the whole picture of a page.  Times are CPU time of this process, best of
the repeats.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import platform
import pstats
import random
import sys
import time

from studio.causal import build_msc, causal_past, run_monitor
from studio.traces import msc_svg

clock = time.process_time
GOAL_SECONDS = 1.0
LIFELINES = ["Planner", "Researcher", "Coder", "TestRunner", "Reviewer", "Committer"]
GUARDS = {"ready": {"cpl": 'TestRunner.status == "passed" & @Reviewer (ok == true)'}}
WORDS = ("plan", "search", "patch", "test", "review", "merge", "report", "<b>bold</b>", "&",
         "the", "candidate", "status", "failed", "passed", "retry", "\"quoted\"")


def make_session(size: int, seed: int = 7) -> list[dict]:
    """Canonical events of one session, in log order (steps 0..size-1)."""
    rng = random.Random(seed)
    events: list[dict] = []
    pending: list[tuple[int, str, str, str]] = []  # (deliver at, message id, sender, receiver)
    sent = 0
    for step in range(size):
        due = [p for p in pending if p[0] <= step]
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))
        event = {"session": "bench", "step": step, "timestamp": 1_700_000_000 + step,
                 "input": None, "output": text[:200], "data": {}}
        if due and rng.random() < 0.6:
            at, mid, sender, receiver = due[0]
            pending.remove(due[0])
            event.update(lifeline=receiver,
                         message={"id": mid, "peer": sender, "kind": "receive"})
        else:
            lifeline = rng.choice(LIFELINES)
            event["lifeline"] = lifeline
            roll = rng.random()
            if roll < 0.35:
                receiver = rng.choice([n for n in LIFELINES if n != lifeline])
                mid = f"m{sent}"
                sent += 1
                event["message"] = {"id": mid, "peer": receiver, "kind": "send"}
                if rng.random() < 0.8:
                    pending.append((step + rng.randint(1, 40), mid, lifeline, receiver))
            elif roll < 0.38 and lifeline == "Committer":
                event["data"] = {"choice": "ready"}
            elif lifeline == "TestRunner":
                event["data"] = {"status": rng.choice(["passed", "failed"])}
            elif lifeline == "Reviewer":
                event["data"] = {"ok": rng.random() < 0.7}
        events.append(event)
    return events


def chart_input(events: list[dict], selected: int | None) -> msc_svg.ChartInput:
    msc = build_msc(events)
    marks: dict[int, list] = {}
    for d in run_monitor(msc, GUARDS):
        marks.setdefault(d.event_index, []).append(
            msc_svg.GuardMark(d.guard, d.causal_value, d.sequential_value, d.disagrees))
    rng = random.Random(11)
    changes = sorted(rng.sample(range(len(events)), min(300, len(events))))
    verdicts = {i: [msc_svg.VerdictMark("no_failure", rng.choice(["violated", "satisfied",
                                                                   "pending"]), 1)]
                for i in changes}
    prefix = "/w/acme/sessions/1/msc?run=3&event="
    return msc_svg.ChartInput(
        msc=msc, title="Message sequence chart of session bench",
        link=lambda step: f"{prefix}{step}",
        texts=[msc_svg.event_text(e.source) for e in msc.events], guards=marks,
        verdicts=verdicts,
        lifeline_verdicts={n: [msc_svg.VerdictMark("no_failure", "violated", 3)]
                           for n in msc.lifelines},
        selected=selected, past=causal_past(msc, selected) if selected is not None else set())


def best(function, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        gc.collect()
        start = clock()
        result = function()
        times.append(clock() - start)
    return min(times), result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)

    events = make_session(args.events)
    plain = chart_input(events, None)
    selected_index = plain.msc.choices[-1] if plain.msc.choices else len(events) - 1
    chosen = chart_input(events, selected_index)
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(msc_svg.render_svg, chosen)
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(20)
        print(out.getvalue())
        return 0

    build_time, msc = best(lambda: build_msc(events), args.repeats)
    monitor_time, decisions = best(lambda: run_monitor(msc, GUARDS), args.repeats)
    svg_time, svg = best(lambda: msc_svg.render_svg(plain), args.repeats)
    selected_time, selected_svg = best(lambda: msc_svg.render_svg(chosen), args.repeats)
    table_time, table = best(lambda: msc_svg.render_table(chosen), args.repeats)

    messages = sum(1 for e in msc.events if e.kind == "send")
    print(f"MSC SVG benchmark - Python {platform.python_version()}, CPU time, best of "
          f"{args.repeats}")
    print(f"session: {len(events):,} events, {len(msc.lifelines)} lifelines, {messages:,} "
          f"messages ({len(msc.in_transit):,} in transit), {len(msc.choices):,} choice events "
          f"({len(decisions):,} guard decisions), {len(chosen.past):,} events in the selected "
          "event's causal past")
    print(f"  build_msc                   {build_time * 1000:8.1f} ms")
    print(f"  run_monitor (1 guard)       {monitor_time * 1000:8.1f} ms")
    print(f"  render_svg                  {svg_time * 1000:8.1f} ms   "
          f"({len(svg) / 1e6:.2f} MB of SVG)")
    print(f"  render_svg, event selected  {selected_time * 1000:8.1f} ms   "
          f"({len(selected_svg) / 1e6:.2f} MB)")
    print(f"  render_table (the events)   {table_time * 1000:8.1f} ms   "
          f"({len(table) / 1e6:.2f} MB)")
    worst = max(svg_time, selected_time)
    verdict = "met" if worst < GOAL_SECONDS else "MISSED"
    print(f"goal: the SVG of {len(events):,} events in under {GOAL_SECONDS:.0f} s - {verdict} "
          f"({worst * 1000:.0f} ms)")
    return 0 if worst < GOAL_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
