"""TRAC, TRAC with reset and instance-level monitoring (paper 000, Algorithms 1 and 2).

Each monitor follows one rule over one session.  ``update(labels, ...)`` takes the label set of
the next step (a frozenset holding atom names, plus the data-atom nodes that hold, see
``SessionMonitor``) and returns the verdict after it.  Steps are numbered from 0.

* ``Trac`` keeps the residual without reset: its verdict is final once reached.
* ``TracR`` resets to the rule after each verdict and records every violation as
  ``(trigger, detected)``: the step its monitoring round began and the step it was detected.
* ``InstanceMonitor`` runs rules of the form ``G phi``: every step opens an obligation ``phi``;
  obligations with the same residual advance together (their number does not slow a step), and
  every obligation that fails is its own violation, with its own trigger step, detection step and
  witness.  No later trigger is lost to a reset.

Witnesses record ``(step, input, output, labels, residual)`` whenever the residual changes.
Every monitor's state serialises to JSON (``to_json``) and ``from_json`` resumes it so that the
rest of the run gives exactly the results of an uninterrupted one.
"""

from __future__ import annotations


from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from typing import Any, NamedTuple

from studio.logic.formula import FALSE, TRUE, Formula
from studio.logic.parser import parse

from .automaton import RuleMachines, State
from .verdicts import AFTER_VIOLATION, EVERY_VERDICT, PENDING, SATISFIED, VIOLATED

# TRAC without reset on a rule that never decides would otherwise keep every residual change.
TRAC_WITNESS_LIMIT = 1000


class WitnessEntry(NamedTuple):
    step: int
    input: Any
    output: Any
    labels: Any          # the step's label set (frozenset) or, after JSON, a sorted tuple
    residual: Formula

    def to_json(self) -> dict:
        return {"step": self.step, "input": self.input, "output": self.output,
                "labels": label_names(self.labels), "residual": self.residual.text}

    @classmethod
    def from_json(cls, data: dict) -> WitnessEntry:
        return cls(data["step"], data.get("input"), data.get("output"),
                   tuple(data.get("labels", ())), parse(data["residual"]))

    def normalised(self) -> tuple:
        return (self.step, self.input, self.output, label_names(self.labels), self.residual)


def label_names(labels: Iterable) -> tuple[str, ...]:
    """Labels as sorted text: atom names, and the text of the data atoms that held."""
    # Past subformulas are computed, not labelled: they are left out.
    return tuple(sorted(x if isinstance(x, str) else x.text
                        for x in labels if isinstance(x, str) or not x.is_past))


class Violation(NamedTuple):
    trigger: int
    detected: int
    witness: tuple[WitnessEntry, ...]
    at_end: bool = False       # detected when the session ended, not by a step

    def to_json(self) -> dict:
        return {"trigger": self.trigger, "detected": self.detected, "at_end": self.at_end,
                "witness": [w.to_json() for w in self.witness]}

    @classmethod
    def from_json(cls, data: dict) -> Violation:
        return cls(data["trigger"], data["detected"],
                   tuple(WitnessEntry.from_json(w) for w in data["witness"]),
                   data.get("at_end", False))


def _carry_json(state: State) -> list | None:
    return list(state.carry.values) if state.carry is not None else None


class Trac:
    """Algorithm 1: the residual after every step; the verdict sticks once reached.

    The witness is logged into parallel lists (step, labels, state) rather than one tuple per
    change: on rules whose residual changes at most steps this halves the cost of a step.  Only
    the latest ``TRAC_WITNESS_LIMIT`` changes are kept; ``witness_dropped`` counts the rest.
    """

    def __init__(self, machines: RuleMachines):
        self.machines = machines
        self.state: State = machines.trac.initial
        self.steps = 0
        self._first_verdict_step: int | None = None
        self.witness_dropped = 0
        self.touched = False
        self._w_steps: list[int] = []
        self._w_labels: list = []
        self._w_states: list[State] = []
        self._w_payload: dict[int, tuple] = {}   # step -> (input, output), when given

    @property
    def verdict(self) -> str:
        return self.state.verdict

    @property
    def residual(self) -> Formula:
        return self.state.residual

    @property
    def first_verdict_step(self) -> int | None:
        if self._first_verdict_step is None and self.steps and self.machines.trac.initial.decided:
            return 0  # a rule that is constant from the start (`true`, `p | !p`)
        return self._first_verdict_step

    @first_verdict_step.setter
    def first_verdict_step(self, step: int | None) -> None:
        self._first_verdict_step = step

    @property
    def witness(self) -> list[WitnessEntry]:
        payload = self._w_payload
        return [WitnessEntry(step, *payload.get(step, (None, None)), labels, state.residual)
                for step, labels, state in zip(self._w_steps, self._w_labels, self._w_states)]

    def update(self, labels: AbstractSet, input: Any = None, output: Any = None) -> str:
        state = self.state
        step = self.steps
        self.steps = step + 1
        if state.decided:
            self.touched = False
            return state.verdict
        nxt = state.row.get(labels)
        if nxt is None:
            nxt = self.machines.trac.compute(state, labels)
        if nxt is not state:
            self.touched = True
            self._w_steps.append(step)
            self._w_labels.append(labels)
            self._w_states.append(nxt)
            if input is not None or output is not None:
                self._w_payload[step] = (input, output)
            self.state = nxt
            if nxt.decided:
                self.first_verdict_step = step
            elif len(self._w_steps) > 2 * TRAC_WITNESS_LIMIT:
                self._trim()
        else:
            self.touched = False
        return nxt.verdict

    def config(self) -> State:
        return self.state

    def run(self, label_sets: Iterable[AbstractSet]) -> str:
        """``update`` over many pre-labelled steps, without inputs or outputs: the fast path.

        A step is one lookup in the current state's row; the verdict is checked only when the
        state changes.
        """
        state = self.state
        compute = self.machines.trac.compute
        log_step, log_labels, log_state = (
            self._w_steps.append, self._w_labels.append, self._w_states.append)
        if state.decided:
            self.steps += sum(1 for _ in label_sets)
            return state.verdict
        row = state.row
        step = self.steps - 1
        iterator = iter(label_sets)
        for step, labels in enumerate(iterator, self.steps):
            try:
                nxt = row[labels]
            except KeyError:
                nxt = compute(state, labels)
            if nxt is not state:
                log_step(step)
                log_labels(labels)
                log_state(nxt)
                state = nxt
                row = nxt.row
                if nxt.decided:
                    self.first_verdict_step = step
                    step += sum(1 for _ in iterator)
                    break
        self.state = state
        self.steps = step + 1
        if len(self._w_steps) > 2 * TRAC_WITNESS_LIMIT:
            self._trim()
        return state.verdict

    def forget_witness(self) -> None:
        """Drop the witness log kept so far (counted in ``witness_dropped``)."""
        self.witness_dropped += len(self._w_steps)
        del self._w_steps[:], self._w_labels[:], self._w_states[:]
        self._w_payload.clear()

    def _trim(self) -> None:
        cut = len(self._w_steps) - TRAC_WITNESS_LIMIT
        del self._w_steps[:cut], self._w_labels[:cut], self._w_states[:cut]
        self.witness_dropped += cut
        if self._w_payload:
            first = self._w_steps[0]
            self._w_payload = {k: v for k, v in self._w_payload.items() if k >= first}

    def final(self) -> str:
        """The LTLf verdict if the session ended now."""
        return SATISFIED if self.state.residual.empty_value else VIOLATED

    def to_json(self) -> dict:
        return {"residual": self.state.residual.text, "carry": _carry_json(self.state),
                "steps": self.steps, "first_verdict_step": self.first_verdict_step,
                "witness": [w.to_json() for w in self.witness],
                "witness_dropped": self.witness_dropped}

    def fork(self) -> Trac:
        """A copy that steps on independently (states are interned and shared)."""
        other = object.__new__(Trac)
        other.__dict__.update(self.__dict__)
        other._w_steps = list(self._w_steps)
        other._w_labels = list(self._w_labels)
        other._w_states = list(self._w_states)
        other._w_payload = dict(self._w_payload)
        return other

    @classmethod
    def from_json(cls, machines: RuleMachines, data: dict) -> Trac:
        self = cls(machines)
        self.state = machines.state_from_json(data["residual"], data["carry"])
        self.steps = data["steps"]
        self.first_verdict_step = data["first_verdict_step"]
        for w in data["witness"]:
            entry = WitnessEntry.from_json(w)
            self._w_steps.append(entry.step)
            self._w_labels.append(entry.labels)
            # A residual alone identifies the state only up to the past memory, which a witness
            # does not need: the entry is read back, never advanced.
            self._w_states.append(machines.trac.state(entry.residual, None))
            if entry.input is not None or entry.output is not None:
                self._w_payload[entry.step] = (entry.input, entry.output)
        self.witness_dropped = data.get("witness_dropped", 0)
        return self


class TracR:
    """Algorithm 2: TRAC that starts afresh after a verdict, so it counts repeated violations.

    Which verdicts restart it is the rule's counting (``studio.monitor.verdicts``):
    ``every_verdict`` restarts after each (Algorithm 2 as the paper gives it),
    ``after_violation`` only after a violation (a satisfied rule stays satisfied), ``first``
    never (the first verdict stands).  A verdict that is not followed by a restart is kept as
    the state, so the monitor stays decided.

    The reset restarts the residual, not history: the past operators' memory runs on across
    rounds, so this monitor advances it itself and its automaton reads the computed values.
    """

    def __init__(self, machines: RuleMachines):
        self.machines = machines
        self.automaton = machines.plain
        self.tracker = machines.tracker
        self.carry = self.tracker.initial if self.tracker is not None else None
        self.state: State = self.automaton.initial
        self.steps = 0
        self.round_start = 0
        self.witness: list[WitnessEntry] = []
        self.violations: list[Violation] = []
        self.satisfactions: list[tuple[int, int]] = []
        self.touched = False
        self.settled = False  # a verdict stands: the counting restarts nothing after it
        counting = machines.rule.counting
        self._restart_after = {EVERY_VERDICT: (SATISFIED, VIOLATED),
                               AFTER_VIOLATION: (VIOLATED,)}.get(counting, ())

    @property
    def residual(self) -> Formula:
        return self.state.residual

    def config(self) -> tuple:
        return (self.carry, self.state, self.settled)

    def update(self, labels: AbstractSet, input: Any = None, output: Any = None) -> str:
        step = self.steps
        self.steps = step + 1
        if self.settled:  # a verdict that stands: nothing later changes it
            self.touched = False
            return self.state.verdict
        touched = False
        if self.tracker is not None:
            carry = self.carry
            self.carry, labels = self.tracker.advance(carry, labels)
            touched = self.carry is not carry
        state = self.state
        nxt = state.row.get(labels)
        if nxt is None:
            nxt = self.automaton.compute(state, labels)
        if nxt is not state:
            touched = True
            self.witness.append(WitnessEntry(step, input, output, labels, nxt.residual))
        if not nxt.decided:
            self.touched = touched
            self.state = nxt
            return PENDING
        self.touched = True
        if nxt.residual is FALSE:
            self.violations.append(Violation(self.round_start, step, tuple(self.witness)))
        else:
            self.satisfactions.append((self.round_start, step))
        if nxt.verdict not in self._restart_after:
            self.state = nxt
            self.settled = True
            return nxt.verdict
        self.state = self.automaton.initial
        self.round_start = step + 1
        self.witness = []
        return nxt.verdict

    def end_violations(self) -> list[Violation]:
        """The rule's violation if the session ends now without any verdict having been reached.

        A round restarted after a verdict and cut short by the end of the session is not
        counted: the rule was already decided once, and the restart only looks for repeats.
        """
        if (self.round_start == 0 and self.steps and not self.settled
                and not self.state.residual.empty_value):
            return [Violation(self.round_start, self.steps - 1, tuple(self.witness), True)]
        return []

    def to_json(self) -> dict:
        return {"residual": self.state.residual.text,
                "carry": list(self.carry.values) if self.carry is not None else None,
                "steps": self.steps, "round_start": self.round_start,
                "settled": self.settled,
                "witness": [w.to_json() for w in self.witness],
                "violations": [v.to_json() for v in self.violations],
                "satisfactions": [list(s) for s in self.satisfactions]}

    def fork(self) -> TracR:
        """A copy that steps on independently."""
        other = object.__new__(TracR)
        other.__dict__.update(self.__dict__)
        other.witness = list(self.witness)
        other.violations = list(self.violations)
        other.satisfactions = list(self.satisfactions)
        return other

    @classmethod
    def from_json(cls, machines: RuleMachines, data: dict) -> TracR:
        self = cls(machines)
        self.state = self.automaton.state(parse(data["residual"]), None)
        if self.tracker is not None and data["carry"] is not None:
            self.carry = self.tracker.carry(tuple(bool(v) for v in data["carry"]))
        self.steps = data["steps"]
        self.round_start = data["round_start"]
        self.settled = data.get("settled", False)
        self.witness = [WitnessEntry.from_json(w) for w in data["witness"]]
        self.violations = [Violation.from_json(v) for v in data["violations"]]
        self.satisfactions = [tuple(s) for s in data["satisfactions"]]
        return self


class _Obligation:
    """One open obligation: its trigger step and its witness so far (a linked list, newest
    first, so obligations that advance together share nothing mutable)."""

    __slots__ = ("chain", "trigger")

    def __init__(self, trigger: int, chain: tuple | None):
        self.trigger = trigger
        self.chain = chain

    def witness(self) -> tuple[WitnessEntry, ...]:
        entries = []
        node = self.chain
        while node is not None:
            entries.append(node[0])
            node = node[1]
        entries.reverse()
        return tuple(entries)


class InstanceMonitor:
    """Instance-level monitoring of ``G phi``: each step opens ``phi`` as its own obligation."""

    def __init__(self, machines: RuleMachines, witnesses: bool = True):
        if machines.obligations is None:
            raise ValueError(f"rule {machines.rule.name!r} is not of the form G phi")
        self.machines = machines
        self.automaton = machines.obligations
        tracker = machines.tracker
        self.tracker = tracker
        self.carry = tracker.initial if tracker is not None else None
        # Open obligations grouped by residual state, in order of first appearance.
        self.groups: dict[State, list[_Obligation]] = {}
        self.steps = 0
        self.violations: list[Violation] = []
        # Without witnesses (bulk audits that only report steps) obligations keep no chain.
        self.witnesses = witnesses
        self.touched = False

    @property
    def open_obligations(self) -> int:
        return sum(len(members) for members in self.groups.values())

    def update(self, labels: AbstractSet, input: Any = None, output: Any = None) -> int:
        """Advance every obligation over one step, then open this step's; returns how many
        obligations failed at this step.  ``touched`` tells whether anything but the step
        counter changed (the session monitor learns from it which rules it may skip)."""
        step = self.steps
        self.steps = step + 1
        touched = False
        if self.tracker is not None:
            carry = self.carry
            cached = carry.row.get(labels)
            nxt_carry, labels = cached if cached is not None else self.tracker.advance(carry, labels)
            if nxt_carry is not carry:
                self.carry = nxt_carry
                touched = True
        compute = self.automaton.compute
        groups = self.groups
        failed = 0
        if groups:
            moves = None
            for state in groups:
                nxt = state.row.get(labels)
                if nxt is None:
                    nxt = compute(state, labels)
                if nxt is not state:
                    if moves is None:
                        moves = []
                    moves.append((state, nxt))
            if moves is not None:
                touched = True
                # Take every moving group out before placing any, so A->B and B->C in one
                # step leave A's obligations at B.
                moving = [(groups.pop(state), nxt) for state, nxt in moves]
                for members, nxt in moving:
                    failed += self._place(members, nxt, step, input, output, labels)
        # This step's obligation, progressed at once: most are discharged right here.
        initial = self.automaton.initial
        first = initial.row.get(labels)
        if first is None:
            first = compute(initial, labels)
        if first.residual is not TRUE:
            touched = True
            member = _Obligation(step, None)
            if first is initial:
                _merge(groups, initial, [member])
            else:
                failed += self._place([member], first, step, input, output, labels)
        self.touched = touched
        return failed

    # Two steps that callers who know the step's effect in advance (``FastSessionMonitor``
    # memoises it per configuration) can take without ``update``'s lookups.  Both leave the
    # step counter behind, as skipped steps do; the caller sets it before the next ``update``.

    def open_obligation(self, state: State, step: int, labels: AbstractSet, input: Any = None,
                        output: Any = None) -> None:
        """``update`` on a step that moves no open obligation and leaves the past memory as it
        was, whose own obligation progresses to ``state`` (neither true nor false)."""
        if state is self.automaton.initial or not self.witnesses:
            chain = None  # no residual change (or no witnesses kept): nothing to log
        else:
            if self.tracker is not None:  # witness entries hold the past nodes' values too
                labels = self.tracker.advance(self.carry, labels)[1]
            chain = (WitnessEntry(step, input, output, labels, state.residual), None)
        member = _Obligation(step, chain)
        members = self.groups.get(state)
        if members is None:
            self.groups[state] = [member]
        else:
            members.append(member)  # every open obligation was opened before this step

    def discharge(self, states: Iterable[State]) -> None:
        """``update`` on a step that leaves the past memory as it was, satisfies the obligations
        of ``states`` and its own, and moves no other."""
        for state in states:
            del self.groups[state]

    def run(self, label_sets: Iterable[AbstractSet]) -> int:
        """``update`` over many pre-labelled steps; returns how many obligations failed.

        The usual step of a safety rule - nothing open, the past memory unchanged, the step's
        own obligation discharged at once - is handled here without a call; any other step goes
        through ``update``.
        """
        groups = self.groups
        initial = self.automaton.initial
        update = self.update
        failed = 0
        step = self.steps
        for labels in label_sets:
            if not groups:
                carry = self.carry
                full = labels
                if carry is not None:
                    cached = carry.row.get(labels)
                    full = cached[1] if cached is not None and cached[0] is carry else None
                if full is not None:
                    first = initial.row.get(full)
                    if first is not None and first.residual is TRUE:
                        step += 1
                        continue
            self.steps = step
            failed += update(labels)
            step += 1
        self.steps = step
        return failed

    def config(self) -> tuple:
        """What determines the next step's effect, besides the labels (not the obligations'
        steps or witnesses)."""
        return (self.carry, tuple(self.groups))

    def _place(self, members: list, nxt: State, step: int, input, output, labels) -> int:
        residual = nxt.residual
        if residual is TRUE:
            return 0
        if self.witnesses:
            entry = WitnessEntry(step, input, output, labels, residual)
            for member in members:
                member.chain = (entry, member.chain)
        if residual is FALSE:
            self.violations.extend(
                Violation(m.trigger, step, m.witness() if self.witnesses else ())
                for m in members)
            return len(members)
        _merge(self.groups, nxt, members)
        return 0

    def end_violations(self) -> list[Violation]:
        """The open obligations that fail if the session ends now."""
        out = []
        for state, members in self.groups.items():
            if not state.residual.empty_value:
                out.extend(Violation(m.trigger, self.steps - 1, m.witness(), True)
                           for m in members)
        out.sort(key=lambda v: v.trigger)
        return out

    def to_json(self) -> dict:
        return {
            "steps": self.steps,
            "carry": list(self.carry.values) if self.carry is not None else None,
            "groups": [{"residual": state.residual.text,
                        "obligations": [{"trigger": m.trigger,
                                         "witness": [w.to_json() for w in m.witness()]}
                                        for m in members]}
                       for state, members in self.groups.items()],
            "violations": [v.to_json() for v in self.violations],
        }

    def fork(self) -> InstanceMonitor:
        """A copy that steps on independently (obligations copied: their witnesses grow)."""
        other = object.__new__(InstanceMonitor)
        other.__dict__.update(self.__dict__)
        other.groups = {state: [_Obligation(m.trigger, m.chain) for m in members]
                        for state, members in self.groups.items()}
        other.violations = list(self.violations)
        return other

    @classmethod
    def from_json(cls, machines: RuleMachines, data: dict,
                  witnesses: bool = True) -> InstanceMonitor:
        self = cls(machines, witnesses)
        self.steps = data["steps"]
        if self.tracker is not None and data["carry"] is not None:
            self.carry = self.tracker.carry(tuple(bool(v) for v in data["carry"]))
        for group in data["groups"]:
            state = self.automaton.state(parse(group["residual"]), None)
            members = self.groups.setdefault(state, [])
            for ob in group["obligations"]:
                chain = None
                for w in ob["witness"]:
                    chain = (WitnessEntry.from_json(w), chain)
                members.append(_Obligation(ob["trigger"], chain))
        self.violations = [Violation.from_json(v) for v in data["violations"]]
        return self


def _merge(groups: dict, state: State, members: list) -> None:
    existing = groups.get(state)
    if existing is None:
        groups[state] = members
    elif existing[-1].trigger < members[0].trigger:
        existing.extend(members)   # the usual case: newer obligations join an older group
    else:
        existing.extend(members)
        existing.sort(key=lambda m: m.trigger)
