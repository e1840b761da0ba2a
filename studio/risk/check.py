"""``python -m studio.risk.check MODEL.json``: reachability probabilities of a DTMC, per state.

MODEL.json is ``{"states": n, "transitions": [[i, j, p], ...], "unsafe": [...], "horizon": k or
null}``; the answer on standard output is ``{"probabilities": [...]}``, the probability from each
state of reaching an unsafe state (within ``horizon`` steps, or ever when it is null).  This is the
contract the comparison with Storm runs against.  A model that does not fit is refused with the
field and index named, exit status 2.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from .reach import reachability

ROW_SUM_TOLERANCE = 1e-9


class ModelError(ValueError):
    """A model file that does not describe a DTMC; the message names the field and index."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_model(data: Any) -> tuple[sp.csr_matrix, np.ndarray, int | None]:
    """The transition matrix, the unsafe states (a boolean mask) and the horizon, or
    ``ModelError``."""
    if not isinstance(data, Mapping):
        raise ModelError("the model must be a JSON object with states, transitions, unsafe "
                         "and horizon")
    n = data.get("states")
    if not _is_int(n) or n < 1:
        raise ModelError(f"states: must be a whole number of states, 1 or more (got {n!r})")
    transitions = data.get("transitions")
    if not isinstance(transitions, list):
        raise ModelError("transitions: must be a list of [from, to, probability]")
    sources = np.empty(len(transitions), dtype=np.int64)
    targets = np.empty(len(transitions), dtype=np.int64)
    weights = np.empty(len(transitions))
    for k, entry in enumerate(transitions):
        if not (isinstance(entry, list) and len(entry) == 3):
            raise ModelError(f"transitions[{k}]: must be [from, to, probability]")
        i, j, p = entry
        for name, index in (("from", i), ("to", j)):
            if not _is_int(index) or not 0 <= index < n:
                raise ModelError(f"transitions[{k}]: {name} state {index!r} is not a state "
                                 f"index (0 to {n - 1})")
        if (not isinstance(p, (int, float)) or isinstance(p, bool) or not math.isfinite(p)
                or not 0 <= p <= 1):
            raise ModelError(f"transitions[{k}]: probability {p!r} is not a number in [0, 1]")
        sources[k], targets[k], weights[k] = i, j, p
    matrix = sp.csr_matrix((weights, (sources, targets)), shape=(n, n))  # duplicates add up
    sums = np.asarray(matrix.sum(axis=1)).ravel()
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOLERANCE)
    if len(bad):
        state = int(bad[0])
        raise ModelError(f"transitions: the probabilities out of state {state} sum to "
                         f"{sums[state]:.12g}, not 1"
                         + (f" (and {len(bad) - 1} more states)" if len(bad) > 1 else ""))
    unsafe_list = data.get("unsafe")
    if not isinstance(unsafe_list, list):
        raise ModelError("unsafe: must be a list of state indices")
    unsafe = np.zeros(n, dtype=bool)
    for k, index in enumerate(unsafe_list):
        if not _is_int(index) or not 0 <= index < n:
            raise ModelError(f"unsafe[{k}]: {index!r} is not a state index (0 to {n - 1})")
        unsafe[index] = True
    horizon = data.get("horizon")
    if horizon is not None and (not _is_int(horizon) or horizon < 0):
        raise ModelError(f"horizon: must be null or a whole number of steps, 0 or more "
                         f"(got {horizon!r})")
    return matrix, unsafe, horizon


def probabilities(data: Any) -> list[float]:
    matrix, unsafe, horizon = parse_model(data)
    return reachability(matrix, unsafe, horizon).tolist()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m studio.risk.check MODEL.json", file=sys.stderr)
        return 2
    try:
        with open(args[0], encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        print(f"{args[0]}: cannot read the model: {exc.strerror}", file=sys.stderr)
        return 2
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = (f" at line {exc.lineno}, column {exc.colno}"
                 if isinstance(exc, json.JSONDecodeError) else "")
        print(f"{args[0]}: not JSON{where}", file=sys.stderr)
        return 2
    try:
        result = probabilities(data)
    except ModelError as exc:
        print(f"{args[0]}: {exc}", file=sys.stderr)
        return 2
    json.dump({"probabilities": result}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
