"""An independent finite-trace evaluator: the oracle the monitors are tested against.

It is the bottom-up dynamic program of the peer checker (paper 003): one boolean array per
subformula, filled right to left for future operators and left to right for past ones, straight
from the LTLf definitions.  It shares nothing with progression but the formula objects and the
reading of data atoms, so agreement between the two is evidence that both are right.

A trace is a sequence of steps; each step is ``(labels, event)``: the set of atom names true
there, and the event (a mapping) that data atoms read, or ``None``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .events import compare
from .formula import Formula

Step = tuple[Iterable[str], Any]


def evaluate(f: Formula, trace: Sequence[Step]) -> list[bool]:
    """Truth of ``f`` at every position of a non-empty finite trace."""
    n = len(trace)
    if n == 0:
        raise ValueError("LTLf is defined on non-empty traces")
    labels = [frozenset(step[0]) for step in trace]
    events = [step[1] for step in trace]
    table: dict[int, list[bool]] = {}
    for g in f.subformulas():
        table[g.id] = _column(g, table, labels, events, n)
    return table[f.id]


def holds(f: Formula, trace: Sequence[Step]) -> bool:
    return evaluate(f, trace)[0]


def _column(g: Formula, table, labels, events, n: int) -> list[bool]:
    op = g.op
    kids = [table[a.id] for a in g.args]
    if op == "true":
        return [True] * n
    if op == "false":
        return [False] * n
    if op == "atom":
        return [g.name in labels[i] for i in range(n)]
    if op == "cmp":
        return [compare(g.payload, events[i] or {}, events[i - 1] if i else None)
                for i in range(n)]
    if op == "not":
        return [not v for v in kids[0]]
    if op == "and":
        return [all(k[i] for k in kids) for i in range(n)]
    if op == "or":
        return [any(k[i] for k in kids) for i in range(n)]
    if op == "implies":
        return [(not kids[0][i]) or kids[1][i] for i in range(n)]
    if op == "iff":
        return [kids[0][i] == kids[1][i] for i in range(n)]
    if op == "X":
        return [kids[0][i + 1] if i + 1 < n else False for i in range(n)]
    if op == "WX":
        return [kids[0][i + 1] if i + 1 < n else True for i in range(n)]
    if op in ("F[]", "G[]"):
        low, high = g.payload
        window = [range(i + low, min(i + high, n - 1) + 1) for i in range(n)]
        if op == "F[]":
            return [any(kids[0][j] for j in window[i]) for i in range(n)]
        return [all(kids[0][j] for j in window[i]) for i in range(n)]
    if op in ("F", "G", "U", "W", "R"):
        out = [False] * (n + 1)
        out[n] = op in ("G", "W", "R")
        for i in range(n - 1, -1, -1):
            if op == "F":
                out[i] = kids[0][i] or out[i + 1]
            elif op == "G":
                out[i] = kids[0][i] and out[i + 1]
            elif op in ("U", "W"):
                out[i] = kids[1][i] or (kids[0][i] and out[i + 1])
            else:  # R: the right side holds up to and including the first step of the left
                out[i] = kids[1][i] and (kids[0][i] or out[i + 1])
        return out[:n]
    if op in ("Y", "Z"):
        first = op == "Z"
        return [kids[0][i - 1] if i else first for i in range(n)]
    if op in ("O", "H", "S"):
        out = []
        before = op == "H"
        for i in range(n):
            if op == "O":
                now = kids[0][i] or before
            elif op == "H":
                now = kids[0][i] and before
            else:
                now = kids[1][i] or (kids[0][i] and before)
            out.append(now)
            before = now
        return out
    raise ValueError(f"unknown operator {op}")  # pragma: no cover
