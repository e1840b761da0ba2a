"""Compiled rules and the lazily built automaton that monitors run on.

A rule is compiled once: its negation normal form, its past subformulas in evaluation order, the
data comparisons it reads, and, for rules of the form ``G phi``, the body that instance-level
monitoring opens as an obligation at every step.

Monitoring a step is progression of the residual against the step's labels.  Progression is
memoised, and its results are cached in the states themselves: every state keeps a row mapping
the label sets it has seen to its successor state, so after warm-up a step costs one dictionary
lookup.  This is a deterministic automaton built on demand, one that still carries the symbolic
residual people read.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from typing import Any

from studio.logic.events import compare
from studio.logic.formula import FALSE, TRUE, Formula
from studio.logic.parser import parse
from studio.logic.past import initial_memory, past_step
from studio.logic.progression import Progressor, is_invariant, nnf

from .verdicts import PER_INSTANCE, CountingError, check_counting

# A state's row stops growing past this many label sets (events carrying ever new irrelevant
# atoms); lookups then fall back to the memoised progression, which keys on relevant labels only.
ROW_LIMIT = 4096


class RuleError(ValueError):
    """A formula the monitor cannot run (for example a future operator inside a past one)."""


class CompiledRule:
    """Everything a monitor needs to know about one rule, computed once."""

    __slots__ = (
        "atoms",
        "body",
        "comparisons",
        "counting",
        "formula",
        "name",
        "normal",
        "past_nodes",
        "prev_paths",
        "uses_prev",
    )

    def __init__(self, name: str, formula: Formula, counting: str | None = None):
        self.name = name
        self.formula = formula
        self.normal = nnf(formula)
        globally = is_invariant(formula)
        try:
            self.counting = check_counting(counting, globally)
        except CountingError as exc:
            raise RuleError(f"rule {name!r}: {exc}") from None
        # Instance-level monitoring: rules of the form G phi counted per instance.
        self.body = self.normal.args[0] if self.counting == PER_INSTANCE else None
        subformulas = formula.subformulas()
        for g in subformulas:
            if g.is_past and any(a.has_future for a in g.args):
                raise RuleError(
                    f"rule {name!r}: the past operator in `{g.text}` looks at a future operator; "
                    "past operators may only contain atoms, data atoms and other past operators")
        self.past_nodes = tuple(g for g in subformulas if g.is_past)
        self.comparisons = tuple(g for g in subformulas if g.op == "cmp")
        self.prev_paths = tuple(sorted({
            operand[1] for g in self.comparisons for operand in (g.payload.left, g.payload.right)
            if operand[0] == "prev"}))
        self.uses_prev = bool(self.prev_paths)
        self.atoms = frozenset(a for a in formula.atoms if isinstance(a, str))

    @property
    def instance_level(self) -> bool:
        return self.body is not None

    def __repr__(self) -> str:
        return f"<CompiledRule {self.name}: {self.formula.text}>"


def compile_rule(name: str, formula: Formula | str, counting: str | None = None) -> CompiledRule:
    """The rule compiled; ``counting`` is one of ``verdicts.COUNTING_MODES`` (``None``: the
    default for the rule's form)."""
    return CompiledRule(name, parse(formula) if isinstance(formula, str) else formula, counting)


def comparison_labels(comparisons: Iterable[Formula], event: Any, previous: Any) -> list[Formula]:
    """The data atoms among ``comparisons`` that hold on ``event``."""
    return [c for c in comparisons if compare(c.payload, event, previous)]


# ---------------------------------------------------------------------------------------------
# Past subformulas: one boolean "carry" per past node, advanced by the since recurrence.

class _Carry:
    """The past operators' memory after some step: for Y and Z the operand's last value, for
    O, H and S their own last value.  Interned per tracker, with a row of transitions."""

    __slots__ = ("row", "values")

    def __init__(self, values: tuple[bool, ...]):
        self.values = values
        self.row: dict[AbstractSet, tuple[_Carry, frozenset]] = {}


class PastTracker:
    """Computes the past subformulas of a rule step by step (paper 001, section 5: the value
    now follows from the operands now and the value one step earlier)."""

    def __init__(self, past_nodes: tuple[Formula, ...]):
        self.nodes = past_nodes
        self.index = {node: i for i, node in enumerate(past_nodes)}
        self._carries: dict[tuple, _Carry] = {}
        self.initial = self.carry(initial_memory(past_nodes))

    def carry(self, values: tuple[bool, ...]) -> _Carry:
        found = self._carries.get(values)
        if found is None:
            found = self._carries[values] = _Carry(values)
        return found

    def advance(self, carry: _Carry, labels: AbstractSet) -> tuple[_Carry, frozenset]:
        """The next carry and the labels extended with the past nodes true at this step."""
        cached = carry.row.get(labels)
        if cached is not None:
            return cached
        memory, now = past_step(self.nodes, carry.values, labels)
        full = frozenset(labels).union(node for node, value in now.items() if value)
        result = (self.carry(memory), full)
        if len(carry.row) < ROW_LIMIT:
            carry.row[labels] = result
        return result


# ---------------------------------------------------------------------------------------------
# The lazy automaton

class State:
    """A residual (with the past operators' memory when the residual still reads them)."""

    __slots__ = ("carry", "decided", "residual", "row", "verdict")

    def __init__(self, residual: Formula, carry: _Carry | None):
        self.residual = residual
        self.carry = carry
        self.row: dict[AbstractSet, State] = {}
        self.decided = residual is TRUE or residual is FALSE
        self.verdict = "satisfied" if residual is TRUE else (
            "violated" if residual is FALSE else "pending")


class Automaton:
    """States of one formula's monitor, shared by every session that runs the formula.

    With a ``tracker`` the states also carry the past operators' memory and rows are keyed by the
    raw labels of a step; without one, rows are keyed by labels that already include the past
    nodes' values (instance-level monitoring computes those once per step for all obligations).
    """

    def __init__(self, formula: Formula, tracker: PastTracker | None,
                 progressor: Progressor | None = None):
        self.progress = progressor or Progressor()
        self.tracker = tracker
        self._states: dict[tuple, State] = {}
        carry = tracker.initial if (tracker is not None and formula.has_past) else None
        self.initial = self.state(formula, carry)

    def state(self, residual: Formula, carry: _Carry | None) -> State:
        if not residual.has_past:
            carry = None  # the memory no longer matters: fewer states
        key = (residual, carry)
        found = self._states.get(key)
        if found is None:
            found = self._states[key] = State(residual, carry)
        return found

    @property
    def size(self) -> int:
        return len(self._states)

    def step(self, state: State, labels: AbstractSet) -> State:
        nxt = state.row.get(labels)
        if nxt is None:
            nxt = self.compute(state, labels)
        return nxt

    def compute(self, state: State, labels: AbstractSet) -> State:
        if state.decided:
            return state  # never cached: fast loops notice a decided state by the miss
        if state.carry is not None:
            carry, full = self.tracker.advance(state.carry, labels)
        else:
            carry, full = None, labels
        nxt = self.state(self.progress(state.residual, full), carry)
        if len(state.row) < ROW_LIMIT:
            state.row[labels] = nxt
        return nxt


class RuleMachines:
    """The automata of one compiled rule, shared across sessions: TRAC's over the whole formula
    and, for ``G phi`` rules, the obligations' automaton over ``phi``."""

    def __init__(self, rule: CompiledRule, progressor: Progressor | None = None):
        self.rule = rule
        progressor = progressor or Progressor()
        self.tracker = PastTracker(rule.past_nodes) if rule.past_nodes else None
        self.trac = Automaton(rule.normal, self.tracker, progressor)
        # Over labels that already carry the past values (the monitor advances the memory).
        self.plain = Automaton(rule.normal, None, progressor)
        self.obligations = (Automaton(rule.body, None, progressor)
                            if rule.instance_level else None)

    def state_from_json(self, residual_text: str, carry_values: list | None) -> State:
        residual = parse(residual_text)
        carry = None
        if carry_values is not None and self.tracker is not None:
            carry = self.tracker.carry(tuple(bool(v) for v in carry_values))
        return self.trac.state(residual, carry)


__all__ = [
    "FALSE",
    "TRUE",
    "Automaton",
    "CompiledRule",
    "PastTracker",
    "RuleError",
    "RuleMachines",
    "State",
    "comparison_labels",
    "compile_rule",
]
