"""Benchmark of monitoring many rules as an audit does: 20 rules x 100,000 events, witnesses on.

Run from the repository root::

    .venv/bin/python -m bench.monitors              # 100 sessions x 1,000 events, best of 5
    .venv/bin/python -m bench.monitors --quick      # 20 sessions x 1,000 events
    .venv/bin/python -m bench.monitors --profile fast   # cProfile of one contender's pass

The events are those of ``bench.pipeline`` (the 20 rules of ``bench.workloads.RULES_20``), shaped
as ``compute_batch`` streams them and labelled by a ``Labeling`` with the built-in atoms, all
before any timer starts.  A timed pass is what ``compute_batch`` does with a session's events
apart from reading and storing: a new monitor per session, each labelled event fed to it, then
``results()``.  Contenders: ``today``, ``SessionMonitor.feed`` (what compute_batch called
before); ``fast``, ``FastSessionMonitor.ingest`` (what it calls now); ``fast.feed``, the same
monitor's ``feed``, which also lists the changes (as the live path needs).  Every contender has
its own rule set, warmed by one untimed pass as a worker's cached rule set is (the first, cold
pass is reported too).  Contenders are timed interleaved, in
rotating order, best of several, in CPU time of this process (other work on the 2 cores
stretches wall time); still, compare their ratio, not absolute times: the machine is noisy.

Before timing, every contender's results (verdicts, first verdict steps, finals, residuals,
violations with their witnesses) and saved state (``to_json``) must equal ``SessionMonitor``'s.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import platform
import pstats
import sys
import time

from studio.labeling.labelers import Labeling
from studio.monitor.session import RuleSet, SessionMonitor

from . import workloads as wl
from .pipeline import make_events

# CPU time of this process: other work on the machine's 2 cores stretches wall time, not this.
clock = time.process_time

try:  # the fast path, when this checkout has it
    from studio.monitor.fast import FastSessionMonitor
except ImportError:  # pragma: no cover - measuring the code before it existed
    FastSessionMonitor = None


def monitor_event(session, step, lifeline, input, output, data, labels) -> dict:
    """The event as ``compute_batch`` builds it (``studio.traces.models.monitor_event``, which
    cannot be imported without Django)."""
    event = dict(data) if isinstance(data, dict) else {}
    event.update(session=session, step=step, lifeline=lifeline, input=input, output=output,
                 data=data if data is not None else {}, labels=labels)
    return event


def labelled_sessions(sessions: int, steps: int) -> list[list[dict]]:
    """Per session, its events labelled as ``compute_batch`` labels them."""
    label = Labeling().label
    out = []
    for session_id, events in enumerate(make_events(sessions, steps)):
        previous = None
        labelled = []
        for step, e in enumerate(events):
            event = monitor_event(session_id, step, e["lifeline"], None, e["output"], e["data"],
                                  e["labels"])
            labelled.append(label(event, previous))
            previous = event
        out.append(labelled)
    return out


def audit_pass(contender: tuple, ruleset: RuleSet, sessions: list[list[dict]],
               keep: bool = False) -> list:
    """What compute_batch does with every session's labelled events, reading and storing aside:
    the results of a session are dropped once read (compute_batch keeps them as text), unless
    ``keep``.  ``contender`` is (monitor class, name of the method that takes an event)."""
    monitor_class, method = contender
    out = []
    for events in sessions:
        monitor = monitor_class(ruleset, witnesses=True)
        feed = getattr(monitor, method)
        for event in events:
            feed(event)
        results = monitor.results()
        out.append(results if keep else sum(len(r.violations) for r in results))
    return out


def normalised(results: list) -> list:
    return [[(r.rule, r.verdict, r.first_verdict_step, r.final, r.residual,
              [(v.trigger, v.detected, v.at_end, tuple(w.normalised() for w in v.witness))
               for v in r.violations]) for r in session] for session in results]


def saved_states(contender: tuple, sessions: list[list[dict]]) -> list[str]:
    monitor_class, method = contender
    ruleset = RuleSet(wl.RULES_20)
    out = []
    for events in sessions:
        monitor = monitor_class(ruleset, witnesses=True)
        for event in events:
            getattr(monitor, method)(event)
        out.append(json.dumps(monitor.to_json(), sort_keys=True))
    return out


TODAY = (SessionMonitor, "feed")


def contenders() -> dict:
    """Name -> (monitor class, method fed each event)."""
    found = {"today": TODAY}
    if FastSessionMonitor is not None:
        found["fast"] = (FastSessionMonitor, "ingest")        # what compute_batch calls
        found["fast.feed"] = (FastSessionMonitor, "feed")     # also lists the changes
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.monitors", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="20 sessions instead of 100")
    parser.add_argument("--sessions", type=int, help="sessions of 1,000 events (default 100)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--profile", metavar="NAME", help="cProfile one contender's warm pass")
    args = parser.parse_args(argv)
    sessions_n = args.sessions or (20 if args.quick else 100)
    steps = 1000
    found = contenders()
    print(f"[bench] labelling {sessions_n} sessions x {steps} events", file=sys.stderr)
    sessions = labelled_sessions(sessions_n, steps)
    events = sessions_n * steps

    if args.profile:
        ruleset = RuleSet(wl.RULES_20)
        audit_pass(found[args.profile], ruleset, sessions)
        profiler = cProfile.Profile()
        profiler.enable()
        audit_pass(found[args.profile], ruleset, sessions)
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).strip_dirs().sort_stats("tottime").print_stats(25)
        print(text.getvalue())
        return 0

    print("[bench] checking every contender against SessionMonitor", file=sys.stderr)
    reference = normalised(audit_pass(TODAY, RuleSet(wl.RULES_20), sessions, True))
    reference_saved = saved_states(TODAY, sessions[:10])
    for name, contender in found.items():
        if contender is TODAY:
            continue
        assert normalised(audit_pass(contender, RuleSet(wl.RULES_20), sessions, True)) \
            == reference, name
        assert saved_states(contender, sessions[:10]) == reference_saved, name

    rulesets = {name: RuleSet(wl.RULES_20) for name in found}
    cold = {}
    for name, contender in found.items():
        gc.collect()
        start = clock()
        audit_pass(contender, rulesets[name], sessions)
        cold[name] = clock() - start
    times: dict[str, list[float]] = {name: [] for name in found}
    names = list(found)
    for r in range(args.repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            gc.collect()
            start = clock()
            audit_pass(found[name], rulesets[name], sessions)
            times[name].append(clock() - start)
    best = {name: min(t) for name, t in times.items()}
    violations = sum(len(rule[5]) for session in reference for rule in session)
    print(f"{len(wl.RULES_20)} rules x {events:,} events ({sessions_n} sessions), witnesses on, "
          f"feed + results per session; {violations:,} violations")
    print(f"{'contender':10} {'best':>9} {'us/event':>9} {'cold pass':>10}  {'vs today':>8}")
    for name in names:
        ratio = best["today"] / best[name]
        print(f"{name:10} {best[name]:8.2f}s {best[name] / events * 1e6:9.2f} "
              f"{cold[name]:9.2f}s  {ratio:7.2f}x")
    print(f"CPU time of this process (time.process_time), best of {args.repeats}, interleaved; "
          f"Python {platform.python_version()}")
    if args.json:
        doc = {"events": events, "sessions": sessions_n, "rules": len(wl.RULES_20),
               "violations": violations, "times": times, "cold": cold, "best": best}
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(doc, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
