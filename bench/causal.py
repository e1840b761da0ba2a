"""Benchmark of the causal monitor (paper 001): 10 lifelines, 1,000,000 events.

Run from the repository root::

    .venv/bin/python -m bench.causal             # 1,000,000 events, best of 3 (about a minute)
    .venv/bin/python -m bench.causal --quick     # 100,000 events
    .venv/bin/python -m bench.causal --events 200000 --repeats 5 --json out.json

The workload is a random execution (seeded): each event is on a random lifeline and is a
receive of one of the messages in transit to it (any of them: delivery is not FIFO), a send to
another lifeline, a choice, or a local action updating ``status`` and ``cand``.  Every lifeline
owns one guard in the style of the paper's merge guard, reading its two neighbours::

    L{i+1}.cand == cand & @L{i+1} (status != "failed" S status == "passed")
      & !@L{i+2} (status == "failed" & Y status == "failed") & P[L{i+2}] status == "passed"

Events are built before any timer starts (canonical dicts, as the JSONL importer yields them).
Timed: ``CausalMonitor.process`` over all events, with both readings (causal and sequential,
the default) and with the causal reading alone; the baseline is a loop that reads the same
fields of every event and does nothing else.  Wall time and this process's CPU time are both
reported (the best of the repeats; the CPU figure moves less when the machine is busy).  The goal
is >= 200,000 events/s of wall time with both readings.  Before timing, the monitor's decisions on a prefix are checked against the
denotational oracle.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import sys
import time

from studio.causal import CausalMonitor, DenotationalSemantics, build_msc

GOAL = 200_000   # events per second, both readings


def lifeline_names(count: int) -> list[str]:
    return [f"L{i}" for i in range(count)]


def guards_for(names: list[str]) -> dict:
    n = len(names)
    return {
        f"merge_{name}": {
            "owner": name,
            "cpl": (f'{names[(i + 1) % n]}.cand == cand & @{names[(i + 1) % n]} '
                    f'(status != "failed" S status == "passed") & '
                    f'!@{names[(i + 2) % n]} (status == "failed" & Y status == "failed") & '
                    f'P[{names[(i + 2) % n]}] status == "passed"'),
        }
        for i, name in enumerate(names)
    }


def workload(events: int, lifelines: int, seed: int = 1) -> tuple[list[str], list[dict]]:
    rng = random.Random(seed)
    names = lifeline_names(lifelines)
    # A few shared data dicts: the monitor never mutates an event.
    updates = [{"status": s} for s in ("running", "passed", "passed", "failed")] + [
        {"cand": c, "status": "running"} for c in range(4)] + [{}]
    waiting: list[list[tuple[str, str]]] = [[] for _ in names]   # per receiver: (id, sender)
    out: list[dict] = []
    sent = 0
    for step in range(events):
        me = rng.randrange(lifelines)
        name = names[me]
        inbox = waiting[me]
        roll = rng.random()
        if inbox and roll < 0.4:
            k = rng.randrange(len(inbox))
            inbox[k], inbox[-1] = inbox[-1], inbox[k]
            mid, sender = inbox.pop()
            out.append({"session": "bench", "step": step, "lifeline": name, "data": {},
                        "message": {"id": mid, "peer": sender, "kind": "receive"}})
        elif roll < 0.65:
            to = (me + 1 + rng.randrange(lifelines - 1)) % lifelines if lifelines > 1 else me
            mid = f"m{sent}"
            sent += 1
            waiting[to].append((mid, name))
            out.append({"session": "bench", "step": step, "lifeline": name, "data": {},
                        "message": {"id": mid, "peer": names[to], "kind": "send"}})
        elif roll < 0.75:
            out.append({"session": "bench", "step": step, "lifeline": name,
                        "data": {"choice": f"merge_{name}"}})
        else:
            out.append({"session": "bench", "step": step, "lifeline": name,
                        "data": rng.choice(updates)})
    return names, out


def run(names, guards, events, sequential=True) -> tuple[int, int]:
    monitor = CausalMonitor(names, guards, sequential=sequential)
    process = monitor.process
    decisions = disagreements = 0
    for event in events:
        found = process(event)
        if found:
            decisions += len(found)
            disagreements += sum(d.disagrees for d in found)
    return decisions, disagreements


def baseline(events) -> int:
    count = 0
    for event in events:
        lifeline = event.get("lifeline")
        message = event.get("message")
        data = event.get("data")
        if message and data is not None and lifeline:
            count += 1
    return count


def check_against_oracle(names, guards, events, prefix: int) -> int:
    """The monitor's decisions on the first ``prefix`` events equal the oracle's."""
    head = events[:prefix]
    msc = build_msc(head, lifelines=names)
    causal = DenotationalSemantics(msc)
    sequential = DenotationalSemantics(msc, "sequential")
    monitor = CausalMonitor(names, guards)
    formulas = {name: monitor.guards[name].formula for name in monitor.guards}
    checked = 0
    for i, event in enumerate(head):
        for d in monitor.process(event, i):
            expected = (causal.holds(formulas[d.guard], i), sequential.holds(formulas[d.guard], i))
            if (d.causal_value, d.sequential_value) != expected:
                raise SystemExit(f"monitor and oracle disagree at event {i} on {d.guard}")
            checked += 1
    return checked


def best_of(label: str, repeats: int, function) -> tuple[float, float, object]:
    """Best wall time, best CPU time of this process (less sensitive to other load on the
    machine) and the last result."""
    times, cpu_times = [], []
    result = None
    for _ in range(repeats):
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        result = function()
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - start_cpu)
        print(f"[bench] {label}: {times[-1]:.2f} s ({cpu_times[-1]:.2f} s CPU)", file=sys.stderr,
              flush=True)
    return min(times), min(cpu_times), result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--lifelines", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100,000 events")
    parser.add_argument("--json", help="also write the results as JSON ('-' for stdout)")
    args = parser.parse_args(argv)
    count = 100_000 if args.quick else args.events

    print(f"[bench] building {count:,} events on {args.lifelines} lifelines", file=sys.stderr)
    names, events = workload(count, args.lifelines)
    guards = guards_for(names)
    checked = check_against_oracle(names, guards, events, prefix=min(400, count))
    print(f"[bench] {checked} decisions on the first 400 events agree with the oracle",
          file=sys.stderr)

    base_time, base_cpu, _ = best_of("baseline loop", args.repeats, lambda: baseline(events))
    both_time, both_cpu, (decisions, disagreements) = best_of(
        "causal + sequential", args.repeats, lambda: run(names, guards, events))
    causal_time, causal_cpu, _ = best_of("causal only", args.repeats,
                                         lambda: run(names, guards, events, sequential=False))

    rows = [("both readings (default)", both_time, both_cpu),
            ("causal reading only", causal_time, causal_cpu),
            ("baseline: read the fields", base_time, base_cpu)]
    print(f"\nCausal monitor: {count:,} events, {args.lifelines} lifelines, "
          f"{len(guards)} guards, {decisions:,} decisions ({disagreements:,} where the readings "
          f"disagree); best of {args.repeats}; Python {platform.python_version()}")
    print(f"  {'':<28} {'wall':>9}  {'events/s':>12}  {'us/event':>8}  {'CPU':>7}  "
          f"{'events/CPU-s':>12}")
    for label, seconds, cpu in rows:
        print(f"  {label:<28} {seconds:7.2f} s  {count / seconds:>12,.0f}  "
              f"{seconds / count * 1e6:8.2f}  {cpu:5.2f} s  {count / cpu:>12,.0f}")
    rate = count / both_time
    passed = rate >= GOAL
    print(f"  goal: >= {GOAL:,} events/s with both readings: "
          f"{'PASS' if passed else 'FAIL'} ({rate:,.0f})")
    if args.json:
        result = {"events": count, "lifelines": args.lifelines, "guards": len(guards),
                  "decisions": decisions, "disagreements": disagreements,
                  "seconds": {"both": both_time, "causal": causal_time, "baseline": base_time},
                  "cpu_seconds": {"both": both_cpu, "causal": causal_cpu, "baseline": base_cpu},
                  "events_per_second": {"both": rate, "causal": count / causal_time,
                                        "baseline": count / base_time},
                  "goal": GOAL, "passed": passed}
        text = json.dumps(result, indent=2)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
