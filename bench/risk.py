"""Benchmark of the risk solver (studio.risk.reach) against Storm on the same chains.

Run from the repository root::

    .venv/bin/python -m bench.risk                 # 10^5 and 10^6 states, best of 3
    .venv/bin/python -m bench.risk --quick         # 10^5 states only
    .venv/bin/python -m bench.risk --states 200000 --repeats 5 --json out.json

The chains are random and seeded (``studio.risk.chains.random_chain``): 3 successors per state with
random weights, 2% absorbing states of which half are unsafe.  Each chain is built once, for us
as a scipy CSR matrix and for Storm with its sparse builder (stormpy, the ``storm`` extra); model
building is not timed on either side.  Timed: the unbounded solve ``P=? [F "unsafe"]`` and the
bounded one ``P=? [F<=10 "unsafe"]`` for every state: our ``reach.reachability`` (graph
precomputation included) against ``stormpy.model_checking`` with its default settings.  Before
the figures are printed, the two answers are compared state by state (largest difference shown;
Storm's default precision is 1e-6 relative, ours 1e-10).  Goal: no slower than Storm.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import studio.risk  # noqa: F401  (sets single-threaded BLAS before numpy loads)
from studio.risk import storm
from studio.risk.chains import random_chain
from studio.risk.reach import reachability

import numpy as np  # noqa: E402  (after studio.risk, see above)

HORIZON = 10


def _best(function, repeats: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - started)
    return best, result


def run(states: int, repeats: int) -> dict:
    matrix, unsafe = random_chain(states, seed=states)
    row: dict = {"states": states, "transitions": int(matrix.nnz),
                 "unsafe": int(unsafe.sum())}
    model = storm.build_dtmc(matrix, unsafe) if storm.available() else None
    for name, horizon in (("unbounded", None), (f"within_{HORIZON}", HORIZON)):
        ours, values = _best(lambda h=horizon: reachability(matrix, unsafe, h), repeats)
        entry = {"ours_s": round(ours, 4)}
        if model is not None:
            storm_best, storm_values = float("inf"), None
            for _ in range(repeats):
                storm_values, seconds = storm.storm_reachability(model, horizon)
                storm_best = min(storm_best, seconds)
            entry["storm_s"] = round(storm_best, 4)
            entry["max_difference"] = float(np.abs(storm_values - values).max())
            entry["speedup"] = round(storm_best / ours, 2)
        row[name] = entry
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^5 states only")
    parser.add_argument("--states", type=int, action="append",
                        help="chain size (repeatable); default 10^5 and 10^6")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    sizes = args.states or ([100_000] if args.quick else [100_000, 1_000_000])
    if not storm.available():
        print("stormpy is not installed (pip install -e '.[storm]'): our figures only",
              file=sys.stderr)
    rows = []
    for states in sizes:
        row = run(states, args.repeats)
        rows.append(row)
        for name in ("unbounded", f"within_{HORIZON}"):
            entry = row[name]
            line = f"{states:>9,} states  {name:<10} ours {entry['ours_s']:.3f} s"
            if "storm_s" in entry:
                line += (f"  Storm {entry['storm_s']:.3f} s  ({entry['speedup']:.1f}x)  "
                         f"max |ours - Storm| {entry['max_difference']:.1e}")
            print(line, flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"python": platform.python_version(), "machine": platform.machine(),
                       "rows": rows}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
