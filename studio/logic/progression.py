"""Negation normal form, progression and the end-of-session verdict.

Progression (paper 000, Appendix B, after Bacchus and Kabanza) rewrites a formula against the
labels of one step into the residual that the rest of the session must satisfy.  It is extended
here to weak next, weak until, release and the bounded operators, and it is exact for finite
sessions: a residual is read on the *possibly empty* rest of the session, so the residual of a
strong next carries "there is a next step" (``F true``) when its operand would otherwise hold on
the empty rest, and the residual of a weak next carries "or the session has ended" (``G false``).
At the end of a session the verdict is the residual's truth on the empty trace
(``Formula.empty_value``), which gives LTLf (De Giacomo and Vardi 2013).

Past subformulas (Y Z O H S) and data comparisons are leaves here: the monitor computes their
truth at each step and passes them in ``labels`` alongside the atom names.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from functools import lru_cache

from . import formula as fm
from .formula import END, FALSE, MORE, TRUE, Formula


def nnf(f: Formula) -> Formula:
    """Negation normal form: negation only on atoms, data atoms and past subformulas;
    no implications or equivalences.  Equivalent to ``f`` on every non-empty finite trace."""
    return _nnf(f, False)


def is_invariant(f: Formula) -> bool:
    """Whether ``f`` is an invariant ``G phi``, decided on its negation normal form: ``!F p``
    is ``G !p`` as much as ``G !p`` is.  The monitor, the counting modes and the explanations
    all ask this one question."""
    return nnf(f).op == "G"


def invariant_body(f: Formula) -> Formula | None:
    """``phi`` when ``f`` is an invariant ``G phi`` (``is_invariant``), else None: the body of
    the normal form (what the monitor checks at each step), or ``f``'s own operand when ``f`` is
    written ``G phi`` with that same body (so it reads as written)."""
    normal = nnf(f)
    if normal.op != "G":
        return None
    if f.op == "G" and nnf(f.args[0]) == normal.args[0]:
        return f.args[0]
    return normal.args[0]


@lru_cache(maxsize=65536)
def _nnf(f: Formula, negate: bool) -> Formula:
    op = f.op
    if op in ("true", "false"):
        return fm.Not(f) if negate else f
    if f.is_leaf:
        return fm.Not(f) if negate else f
    if op == "not":
        return _nnf(f.args[0], not negate)
    if op in ("and", "or"):
        parts = [_nnf(a, negate) for a in f.args]
        return (fm.Or if (op == "and") == negate else fm.And)(*parts)
    if op == "implies":
        a, b = f.args
        if negate:
            return fm.And(_nnf(a, False), _nnf(b, True))
        return fm.Or(_nnf(a, True), _nnf(b, False))
    if op == "iff":
        a, b = f.args
        pa, na, pb, nb = _nnf(a, False), _nnf(a, True), _nnf(b, False), _nnf(b, True)
        if negate:
            return fm.Or(fm.And(pa, nb), fm.And(na, pb))
        return fm.Or(fm.And(pa, pb), fm.And(na, nb))
    if op in ("X", "WX", "F", "G"):
        dual = {"X": "WX", "WX": "X", "F": "G", "G": "F"}[op] if negate else op
        return fm.UNARY[dual](_nnf(f.args[0], negate))
    if op in fm.BOUNDED:
        a, b = f.payload
        inner = _nnf(f.args[0], negate)
        if (op == "F[]") != negate:
            return fm.FBounded(a, b, inner)
        return fm.GBounded(a, b, inner)
    left, right = f.args
    if not negate:
        return fm.BINARY[op](_nnf(left, False), _nnf(right, False))
    nl, nr = _nnf(left, True), _nnf(right, True)
    if op == "U":        # !(a U b) = !a R !b
        return fm.R(nl, nr)
    if op == "R":        # !(a R b) = !a U !b
        return fm.U(nl, nr)
    if op == "W":        # !(a W b) = !b U (!a & !b)
        return fm.U(nr, fm.And(nl, nr))
    raise AssertionError(f"no normal form for {op}")  # pragma: no cover


def strong_next_residual(f: Formula) -> Formula:
    """What ``X f`` leaves after a step: ``f``, which must also fail if the session ends.

    (A bounded operator that shrinks to ``[0,0]`` is simplified to its operand, so it needs the
    same care as ``X``: ``G[1,1] p`` leaves "p at the next step, if there is one".)
    """
    return fm.And(f, MORE) if f.empty_value else f


def weak_next_residual(f: Formula) -> Formula:
    """What ``WX f`` leaves after a step: ``f``, or the session has ended."""
    return f if f.empty_value else fm.Or(f, END)


def progress_uncached(f: Formula, labels: AbstractSet) -> Formula:
    """One step of progression of a formula in negation normal form.

    ``labels`` holds the names of the atoms true at this step and the data-atom and past
    subformula nodes true at this step.
    """
    op = f.op
    if op == "true" or op == "false":
        return f
    if op == "atom":
        return TRUE if f.name in labels else FALSE
    if op == "not":
        inner = f.args[0]
        held = (inner.name in labels) if inner.op == "atom" else (inner in labels)
        return FALSE if held else TRUE
    if op == "cmp" or op in fm.PAST_OPS:
        return TRUE if f in labels else FALSE
    if op == "and":
        return fm.And(*[progress_uncached(a, labels) for a in f.args])
    if op == "or":
        return fm.Or(*[progress_uncached(a, labels) for a in f.args])
    if op == "X":
        return strong_next_residual(f.args[0])
    if op == "WX":
        return weak_next_residual(f.args[0])
    if op == "F":
        return fm.Or(progress_uncached(f.args[0], labels), f)
    if op == "G":
        return fm.And(progress_uncached(f.args[0], labels), f)
    if op == "U":
        a, b = f.args
        return fm.Or(progress_uncached(b, labels), fm.And(progress_uncached(a, labels), f))
    if op == "W":
        a, b = f.args
        return fm.Or(progress_uncached(b, labels), fm.And(progress_uncached(a, labels), f))
    if op == "R":
        a, b = f.args
        return fm.And(progress_uncached(b, labels), fm.Or(progress_uncached(a, labels), f))
    if op == "F[]":
        low, high = f.payload
        inner = f.args[0]
        if low > 0:
            return strong_next_residual(fm.FBounded(low - 1, high - 1, inner))
        now = progress_uncached(inner, labels)
        if high == 0:
            return now
        return fm.Or(now, strong_next_residual(fm.FBounded(0, high - 1, inner)))
    if op == "G[]":
        low, high = f.payload
        inner = f.args[0]
        if low > 0:
            return weak_next_residual(fm.GBounded(low - 1, high - 1, inner))
        now = progress_uncached(inner, labels)
        if high == 0:
            return now
        return fm.And(now, weak_next_residual(fm.GBounded(0, high - 1, inner)))
    raise ValueError(f"progression needs negation normal form; got {op} in {f.text}")


class Progressor:
    """Progression memoised on (formula, the labels it reads).

    Keys hold only the labels relevant to the formula, so irrelevant atoms on an event do not
    multiply entries.  The table is bounded: past ``limit`` entries it starts afresh.
    """

    def __init__(self, limit: int = 200_000):
        self.limit = limit
        self._memo: dict[tuple, Formula] = {}
        self.hits = 0
        self.misses = 0

    def __call__(self, f: Formula, labels: AbstractSet) -> Formula:
        if f is TRUE or f is FALSE:
            return f
        relevant = f.atoms.intersection(labels)
        key = (f, relevant)
        found = self._memo.get(key)
        if found is not None:
            self.hits += 1
            return found
        self.misses += 1
        if len(self._memo) >= self.limit:
            self._memo.clear()
        result = progress_uncached(f, relevant)
        self._memo[key] = result
        return result


progress = Progressor()


def final_verdict(residual: Formula) -> bool:
    """The LTLf verdict when the session ends with ``residual`` left to satisfy."""
    return residual.empty_value
