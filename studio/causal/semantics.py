"""The denotational semantics of CPL (paper 001, definition 3), read directly over a whole MSC.

This is the oracle the online monitor is tested against, so it is written plainly from the
definitions and shares nothing with the monitor:

* the causal past of an event is found by walking predecessor edges (previous local event and,
  for a receive, its send) back from it;
* ``prev(e)`` is the event just before e on its lifeline;
* ``latest_B(e)`` is the event of B in the visible past of e that is latest on B;
* ``x`` reads the valuation of e, ``B.x`` that of ``latest_B(e)``; an atomic condition with an
  undefined term is false;
* ``Y phi``: prev(e) exists and satisfies phi;  ``@B phi``: latest_B(e) exists and satisfies phi;
* ``phi S psi``: some f on e's lifeline with f <= e satisfies psi and every g with f < g <= e on
  the lifeline satisfies phi;
* ``P[B] phi``: some event of B in the visible past of e satisfies phi; ``P phi``: some event of
  the visible past does.

The *sequential* reading is the same definition with a different notion of "visible": instead of
the causal past, everything at or before e in a sequential log (``Msc.log_order()`` unless
another order is given).  It is what a monitor reading one merged log would compute: "the latest
value of B" is B's latest event earlier in the log, whether or not it could have reached e.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Undefined terms and comparisons read exactly as the rule language's data atoms.
from studio.logic.events import MISSING, compare_values, value_kind  # noqa: F401 - re-exported

from .formula import CplFormula
from .msc import RECEIVE, Msc
from .parser import parse_cpl

CAUSAL, SEQUENTIAL = "causal", "sequential"


class DenotationalSemantics:
    """``holds(formula, e)``: e |= formula over ``msc``, causally or in the sequential reading."""

    def __init__(self, msc: Msc, reading: str = CAUSAL, log_order: Sequence[int] | None = None):
        if reading not in (CAUSAL, SEQUENTIAL):
            raise ValueError(f"reading must be {CAUSAL!r} or {SEQUENTIAL!r}")
        self.msc = msc
        self.reading = reading
        events = msc.events
        order = list(log_order) if log_order is not None else msc.log_order()
        if sorted(order) != list(range(len(events))):
            raise ValueError("log_order must list every event exactly once")
        self._rank = {i: r for r, i in enumerate(order)}
        self._visible: dict[int, frozenset[int]] = {}
        self._memo: dict[tuple[int, int], bool] = {}

    # --- the MSC's structure, from the definitions ---

    def _predecessors(self, e: int) -> list[int]:
        event = self.msc.events[e]
        found = [f.index for f in self.msc.events
                 if f.lifeline == event.lifeline and f.position == event.position - 1]
        if event.kind == RECEIVE and event.partner is not None:
            found.append(event.partner)
        return found

    def visible(self, e: int) -> frozenset[int]:
        """The events e can see: its causal past, or in the sequential reading everything at or
        before it in the log."""
        known = self._visible.get(e)
        if known is not None:
            return known
        if self.reading == SEQUENTIAL:
            mine = self._rank[e]
            found = frozenset(f for f, r in self._rank.items() if r <= mine)
        else:
            seen = {e}
            frontier = [e]
            while frontier:
                f = frontier.pop()
                for p in self._predecessors(f):
                    if p not in seen:
                        seen.add(p)
                        frontier.append(p)
            found = frozenset(seen)
        self._visible[e] = found
        return found

    def previous_local(self, e: int) -> int | None:
        event = self.msc.events[e]
        for f in self.msc.events:
            if f.lifeline == event.lifeline and f.position == event.position - 1:
                return f.index
        return None

    def latest(self, e: int, lifeline: str) -> int | None:
        candidates = [f for f in self.visible(e) if self.msc.events[f].lifeline == lifeline]
        if not candidates:
            return None
        return max(candidates, key=lambda f: self.msc.events[f].position)

    def term_value(self, e: int, term: tuple) -> Any:
        if term[0] == "const":
            return term[1]
        _, lifeline, name = term
        at = e if lifeline is None else self.latest(e, lifeline)
        if at is None:
            return MISSING
        return self.msc.events[at].valuation.get(name, MISSING)

    # --- satisfaction ---

    def holds(self, f: CplFormula, e: int) -> bool:
        key = (f.id, e)
        known = self._memo.get(key)
        if known is None:
            known = self._memo[key] = self._holds(f, e)
        return known

    def _holds(self, f: CplFormula, e: int) -> bool:
        op = f.op
        if op == "true":
            return True
        if op == "false":
            return False
        if op == "cmp":
            left, cmp, right = f.payload
            return compare_values(cmp, self.term_value(e, left), self.term_value(e, right))
        if op == "not":
            return not self.holds(f.args[0], e)
        if op == "and":
            return all(self.holds(a, e) for a in f.args)
        if op == "or":
            return any(self.holds(a, e) for a in f.args)
        if op == "implies":
            return (not self.holds(f.args[0], e)) or self.holds(f.args[1], e)
        if op == "iff":
            return self.holds(f.args[0], e) == self.holds(f.args[1], e)
        if op == "Y":
            p = self.previous_local(e)
            return p is not None and self.holds(f.args[0], p)
        if op == "at":
            b = self.latest(e, f.payload)
            return b is not None and self.holds(f.args[0], b)
        if op == "S":
            phi, psi = f.args
            here = self.msc.events[e]
            line = [g for g in self.msc.events
                    if g.lifeline == here.lifeline and g.position <= here.position]
            for start in line:
                if self.holds(psi, start.index) and all(
                        self.holds(phi, g.index) for g in line if g.position > start.position):
                    return True
            return False
        if op == "P":
            return any(self.holds(f.args[0], g) for g in self.visible(e)
                       if f.payload is None or self.msc.events[g].lifeline == f.payload)
        raise ValueError(f"unknown operator {op!r}")  # pragma: no cover


def evaluate_denotational(msc: Msc, guard: CplFormula | str, event_index: int,
                          reading: str = CAUSAL, log_order: Sequence[int] | None = None) -> bool:
    """Whether ``guard`` holds at event ``event_index`` of ``msc`` (definition 3).  With
    ``reading="sequential"`` the latest event of a lifeline is read from the log order instead
    of the causal past."""
    formula = parse_cpl(guard) if isinstance(guard, str) else guard
    if not 0 <= event_index < len(msc.events):
        raise IndexError(f"the MSC has no event {event_index}")
    return DenotationalSemantics(msc, reading, log_order).holds(formula, event_index)
