"""Benchmark of anticipatory verdicts (issue 17): the cost of a step with and without them.

Run from the repository root::

    .venv/bin/python -m bench.anticipation            # 50 sessions x 1,000 events, best of 5
    .venv/bin/python -m bench.anticipation --quick    # 10 sessions x 1,000 events
    .venv/bin/python -m bench.anticipation --random   # how early, on random formulas

Workload: the 20 rules of ``bench.workloads.RULES_20`` over ``bench.workloads.agent_events``
(about 1.1 labels per event, data amount/status/risk/region).  A pass is what an audit does per
session: a new ``FastSessionMonitor``, every event ingested, then its results; the contender
with anticipation also calls ``SessionAnticipation.observe(event)`` after every event and reads
``results()`` at the end.  Both run on their own rule set, warmed by one untimed pass (a
worker's cached rule set; the anticipator's decisions are cached per rule set the same way).
Timed in CPU time of this process, interleaved, best of several: compare the ratio.

Reported: microseconds per step of each, their ratio (the issue asks for at most 2x), the
searches and z3 calls of the warm-up pass and of the timed passes (after warm-up they should be
0: every state met was decided once), and how the 20 rules ended up in the last session.

``--random``: the issue's measurement of how late progression is.  Random LTLf formulas over
three atoms (seeded), each on a random trace of 12 steps; for every pair where the verdict
becomes certain within the trace, the step anticipation says so (exact: checked in the tests
against an independent automaton) against the step progression reaches true or false.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import platform
import sys
import time

from studio.monitor.anticipation import Anticipator, SessionAnticipation
from studio.monitor.fast import FastSessionMonitor
from studio.monitor.session import RuleSet, SessionMonitor

from . import workloads as wl

clock = time.process_time


def sessions_of(count: int, steps: int) -> list[list[dict]]:
    return [wl.agent_events(steps, seed=100 + s) for s in range(count)]


def plain_pass(ruleset: RuleSet, sessions) -> None:
    for events in sessions:
        monitor = FastSessionMonitor(ruleset, witnesses=False)
        ingest = monitor.ingest
        for event in events:
            ingest(event)
        monitor.results()


def anticipating_pass(ruleset: RuleSet, anticipator: Anticipator, sessions) -> list:
    out = None
    for events in sessions:
        monitor = FastSessionMonitor(ruleset, witnesses=False)
        anticipation = SessionAnticipation(monitor, anticipator)
        ingest, observe = monitor.ingest, anticipation.observe
        for event in events:
            ingest(event)
            observe(event)
        monitor.results()
        out = anticipation.results()
    return out


def random_formula(rng, depth: int):
    from studio.logic import formula as fm

    atoms = [fm.Atom(a) for a in "pqr"]
    if depth == 0 or rng.random() < 0.2:
        leaf = rng.choice(atoms)
        return fm.Not(leaf) if rng.random() < 0.3 else leaf
    op = rng.choice(["and", "or", "not", "X", "WX", "F", "G", "U", "W", "R"])
    if op in ("and", "or", "U", "W", "R"):
        args = (random_formula(rng, depth - 1), random_formula(rng, depth - 1))
        return {"and": fm.And, "or": fm.Or, "U": fm.U, "W": fm.W, "R": fm.R}[op](*args)
    return fm.UNARY[op](random_formula(rng, depth - 1))


def random_item(pairs: int = 2000, seed: int = 17) -> dict:
    """Per (formula, trace): the first step the verdict is certain, by anticipation and by
    progression (None: never within the trace)."""
    import random as _random

    rng = _random.Random(seed)
    counts = collections.Counter()
    for _ in range(pairs):
        f = random_formula(rng, 4)
        ruleset = RuleSet([("f", f, "first")])
        monitor = SessionMonitor(ruleset, witnesses=False)
        anticipation = SessionAnticipation(monitor)
        for _step in range(12):
            event = {"labels": [a for a in "pqr" if rng.random() < 0.5]}
            monitor.feed(event)
            anticipation.observe(event)
        certain = anticipation.since[0]
        if certain is None:
            continue
        progressed = monitor.results()[0].first_verdict_step
        if progressed == certain:
            counts["on time"] += 1
        elif progressed is None:
            counts["never"] += 1
        else:
            counts["late"] += 1
    return {"pairs decided": sum(counts.values()), **counts}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sessions", type=int)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--random", action="store_true",
                        help="how much earlier than progression, on random formulas")
    args = parser.parse_args(argv)
    if args.random:
        print(json.dumps({"progression, where anticipation is certain within 12 steps":
                          random_item()}, indent=2))
        return 0
    count = args.sessions or (10 if args.quick else 50)
    sessions = sessions_of(count, args.steps)
    steps = count * args.steps

    plain_rules = RuleSet(wl.RULES_20)
    ant_rules = RuleSet(wl.RULES_20)
    anticipator = Anticipator(ant_rules)

    cold = clock()
    plain_pass(plain_rules, sessions)
    plain_cold = clock() - cold
    cold = clock()
    anticipating_pass(ant_rules, anticipator, sessions)
    ant_cold = clock() - cold
    warm = anticipator.stats()

    best = {"plain": float("inf"), "anticipation": float("inf")}
    last = None
    for r in range(args.repeats):
        order = ["plain", "anticipation"] if r % 2 == 0 else ["anticipation", "plain"]
        for name in order:
            gc.collect()
            start = clock()
            if name == "plain":
                plain_pass(plain_rules, sessions)
            else:
                last = anticipating_pass(ant_rules, anticipator, sessions)
            best[name] = min(best[name], clock() - start)
    after = anticipator.stats()
    per_plain = best["plain"] / steps * 1e6
    per_ant = best["anticipation"] / steps * 1e6
    figures = {
        "workload": f"RULES_20 x agent_events: {count} sessions x {args.steps} events",
        "python": platform.python_version(),
        "us_per_step_plain": round(per_plain, 3),
        "us_per_step_anticipation": round(per_ant, 3),
        "ratio": round(per_ant / per_plain, 3),
        "cold_pass_s": {"plain": round(plain_cold, 3), "anticipation": round(ant_cold, 3)},
        "warm_up": warm,
        "timed_passes_new": {k: after[k] - warm[k] for k in ("searches", "smt_calls")},
        "last_session": dict(collections.Counter(r["complete"] for r in last)),
        "not_anticipated": [r["rule"] for r in last if not r["anticipated"]],
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:26} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
