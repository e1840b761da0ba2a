"""Review aids with real data values (issue 17): shortest satisfying / violating traces and
equivalence between formulas that read data atoms, exact in the fragment of ``studio.logic.smt``.

``studio.logic.review`` reads data atoms as independent propositions, an over-approximation
(``x > 5`` and ``x > 5 & x > 3`` differ there on a letter no event produces).  Here the same
breadth-first search over progression residuals (``review._search``) takes its steps from
``smt.Frames``: only combinations of data atoms some event can make true, with the context
``prev()`` reads carried from step to step.  So "no trace" after an exhaustive search means no
sequence of real events, and a trace found is one: the search's letters are turned into events
with concrete values by one z3 query over the whole trace (``events``), with the kinds and
semantics of ``studio.logic.events.compare`` (strings as z3 strings, in lexicographic order).

Formulas without data atoms, or with data atoms outside the fragment, get the propositional
search's answer (``exact_data`` False for the latter).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .anticipation import data_expander
from .events import put_path
from .formula import FALSE, TRUE, Formula
from .review import (
    STATE_CAP,
    _absorb,
    _as_formula,
    _search,
    find_distinguishing_trace,
    find_trace,
    propositional_abstraction,
)
from .progression import nnf
from .smt import (
    BOOL_K,
    MISSING_K,
    NULL_K,
    NUMBER_K,
    OTHER_K,
    STRING_K,
    Z3_LOCK,
    DataFragmentError,
    Frames,
)


@dataclass(frozen=True)
class DataSearchResult:
    """A search's answer with real data values.

    ``events``      the trace as events (``{"labels": [...], "data": {...}, ...}``), or None;
    ``trace``       the same steps as label sets (atoms and the texts of the data atoms that
                    hold), as ``review`` gives them;
    ``exhaustive``  the answer holds for traces of every length;
    ``exact_data``  data atoms were read as data (False: outside the fragment, read as
                    independent propositions);
    ``message``     the answer in a sentence.
    """

    events: list[dict] | None
    trace: list | None
    exhaustive: bool
    exact_data: bool
    states: int
    message: str

    @property
    def found(self) -> bool:
        return self.trace is not None


def _comparisons(formulas: Sequence[Formula]) -> tuple[Formula, ...]:
    seen: dict[Formula, None] = {}
    for f in formulas:
        for g in f.subformulas():
            if g.op == "cmp":
                seen.setdefault(g)
    return tuple(seen)


def _data_search(formulas, goal, settled, max_length, state_cap, what):
    comparisons = _comparisons(formulas)
    try:
        frames = Frames(comparisons)
    except DataFragmentError:
        return None, None
    abstracts = [propositional_abstraction(nnf(f)) for f in formulas]
    result = _search(formulas, goal=goal, settled=settled, max_length=max_length,
                     allow_empty=False, state_cap=state_cap, what=what,
                     start=(tuple(_absorb(a) for a in abstracts), None, frames.initial),
                     expand=data_expander(frames, abstracts))
    return result, frames


def _answer(result, frames, fallback, what: str) -> DataSearchResult:
    if result is None:  # outside the fragment
        return DataSearchResult(None, fallback.trace, fallback.exhaustive, False,
                                fallback.states, fallback.message)
    events = events_for(frames, result.trace) if result.trace is not None else None
    message = result.message.replace(" (data atoms read as independent propositions)",
                                     " (data atoms read as data)")
    return DataSearchResult(events, result.trace, result.exhaustive, True, result.states,
                            message)


def find_data_trace(f: Formula | str, satisfying: bool, max_length: int = 12,
                    state_cap: int = STATE_CAP) -> DataSearchResult:
    """A shortest non-empty trace of real events that satisfies (violates) ``f``."""
    f = _as_formula(f)
    what = "satisfies the formula" if satisfying else "violates the formula"
    if not _comparisons([f]):
        r = find_trace(f, satisfying, max_length, state_cap=state_cap)
        return DataSearchResult(_plain_events(r.trace), r.trace, r.exhaustive, True, r.states,
                                r.message)
    result, frames = _data_search(
        (f,), goal=lambda v: v[0] == satisfying,
        settled=lambda r: r[0] is TRUE or r[0] is FALSE,
        max_length=max_length, state_cap=state_cap, what=what)
    fallback = find_trace(f, satisfying, max_length) if result is None else None
    return _answer(result, frames, fallback, what)


def find_data_distinguishing_trace(a: Formula | str, b: Formula | str, max_length: int = 12,
                                   state_cap: int = STATE_CAP) -> DataSearchResult:
    """A shortest trace of real events on which ``a`` and ``b`` get different verdicts; none
    after an exhaustive search means they are equivalent on every sequence of events."""
    a, b = _as_formula(a), _as_formula(b)
    what = "tells the two formulas apart"
    if not _comparisons([a, b]):
        r = find_distinguishing_trace(a, b, max_length, state_cap=state_cap)
        return DataSearchResult(_plain_events(r.trace), r.trace, r.exhaustive, True, r.states,
                                r.message)
    result, frames = _data_search(
        (a, b), goal=lambda v: v[0] != v[1],
        settled=lambda r: r[0] is r[1] or (r[0] in (TRUE, FALSE) and r[1] in (TRUE, FALSE)),
        max_length=max_length, state_cap=state_cap, what=what)
    fallback = find_distinguishing_trace(a, b, max_length) if result is None else None
    return _answer(result, frames, fallback, what)


def data_equivalent(a: Formula | str, b: Formula | str, max_length: int = 12) -> bool | None:
    """True when no sequence of events tells ``a`` and ``b`` apart (exhaustive search), False
    when one does, None when the search could not decide."""
    found = find_data_distinguishing_trace(a, b, max_length)
    if found.found:
        return False
    return True if found.exhaustive and found.exact_data else None


# ---------------------------------------------------------------------------------------------
# From letters to events

def _plain_events(trace) -> list[dict] | None:
    if trace is None:
        return None
    return [{"labels": sorted(letter)} for letter in trace]


def events_for(frames: Frames, trace: list) -> list[dict]:
    """Events with concrete values whose data atoms hold exactly as in ``trace`` (label sets
    with the texts of the data atoms that hold)."""
    with Z3_LOCK:
        return _events_for(frames, trace)


def _events_for(frames: Frames, trace: list) -> list[dict]:
    import z3

    paths = frames.paths
    n = len(trace)
    names = {c.text: c for c in frames.comparisons}
    steps = []
    for i in range(n):
        steps.append({p: (z3.Int(f"k{i}|{p}"), z3.Real(f"n{i}|{p}"), z3.String(f"s{i}|{p}"),
                          z3.Bool(f"b{i}|{p}"), z3.Int(f"o{i}|{p}")) for p in paths})
    missing = (z3.IntVal(MISSING_K), z3.RealVal(0), z3.StringVal(""), z3.BoolVal(False),
               z3.IntVal(0))

    def operand(side, i):
        kind, value = side
        if kind == "path":
            return steps[i][value]
        if kind == "prev":
            return steps[i - 1][value] if i else missing
        k = {type(None): NULL_K, bool: BOOL_K, str: STRING_K}.get(type(value), NUMBER_K)
        return (z3.IntVal(k), z3.RealVal(str(Fraction(value))) if k == NUMBER_K else
                z3.RealVal(0), z3.StringVal(value if k == STRING_K else ""),
                z3.BoolVal(bool(value) if k == BOOL_K else False), z3.IntVal(0))

    def atom(c, i):
        p = c.payload
        (kl, nl, sl, bl, ol), (kr, nr, sr, br, orr) = operand(p.left, i), operand(p.right, i)
        defined = z3.And(kl != MISSING_K, kr != MISSING_K)
        same = z3.And(kl == kr, z3.Or(kl == NULL_K, z3.And(kl == BOOL_K, bl == br),
                                      z3.And(kl == NUMBER_K, nl == nr),
                                      z3.And(kl == STRING_K, sl == sr),
                                      z3.And(kl == OTHER_K, ol == orr)))
        if p.op == "==":
            return z3.And(defined, same)
        if p.op == "!=":
            return z3.And(defined, z3.Not(same))
        num = {"<": nl < nr, "<=": nl <= nr, ">": nl > nr, ">=": nl >= nr}[p.op]
        text = {"<": sl < sr, "<=": sl <= sr, ">": sl > sr, ">=": sl >= sr}[p.op]
        return z3.And(defined, kl == kr, z3.Or(z3.And(kl == NUMBER_K, num),
                                              z3.And(kl == STRING_K, text)))

    constraints = []
    for i, letter in enumerate(trace):
        for p in paths:
            constraints += [steps[i][p][0] >= 0, steps[i][p][0] <= OTHER_K]
        for text, c in names.items():
            holds = atom(c, i)
            constraints.append(holds if text in letter else z3.Not(holds))
    printable = [z3.InRe(steps[i][p][2], z3.Star(z3.Range(" ", "~")))
                 for i in range(n) for p in paths]
    solver = z3.Solver()
    solver.add(*constraints)
    solver.push()
    solver.add(*printable)
    frames.calls += 1
    if solver.check() != z3.sat:
        solver.pop()
        frames.calls += 1
        if solver.check() != z3.sat:  # pragma: no cover - the search only takes real steps
            raise AssertionError("the trace's data atoms have no values")
    model = solver.model()
    out = []
    for i, letter in enumerate(trace):
        event: dict = {"labels": sorted(x for x in letter if x not in names)}
        for p in paths:
            k, num, text, flag, other = steps[i][p]
            kind = model.eval(k, model_completion=True).as_long()
            if kind == MISSING_K:
                continue
            value: Any
            if kind == NULL_K:
                value = None
            elif kind == BOOL_K:
                value = z3.is_true(model.eval(flag, model_completion=True))
            elif kind == NUMBER_K:
                r = model.eval(num, model_completion=True)
                q = Fraction(r.numerator_as_long(), r.denominator_as_long())
                value = q.numerator if q.denominator == 1 else float(q)
            elif kind == STRING_K:
                value = model.eval(text, model_completion=True).py_value()
            else:
                value = {"id": model.eval(other, model_completion=True).as_long()}
            put_path(event, p, value)
        out.append(event)
    return out


__all__ = ["DataSearchResult", "data_equivalent", "events_for", "find_data_distinguishing_trace",
           "find_data_trace"]
