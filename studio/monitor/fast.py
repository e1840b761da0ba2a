"""``FastSessionMonitor``: ``SessionMonitor`` for long runs of events (audits), same results.

It gives exactly what ``SessionMonitor`` gives - the changes ``feed`` returns, ``results()``,
witnesses, ``previous``, ``to_json`` (it resumes from ``SessionMonitor.to_json``, and the other
way round) - and takes less time per event:

* Every rule's configuration (TRAC's state and the violation monitor's ``config()``) is an
  interned ``RuleNode`` shared by all sessions of the rule set.  A node's row says what a step
  does, per label set as the rule sees it (``LabelKeys``: only the rule's own atoms and data
  atoms count): nothing (the rule is skipped, as ``SessionMonitor`` skips it), or which of the
  rule's two monitors change, how, and the node after the step.  So a step costs one list index
  per rule it looks at plus the work of the monitors that change, and it looks only at the
  rules whose items it holds and the rules whose node does something on a step holding none
  of them (most nodes do nothing then): no configuration is rebuilt afterwards, a
  monitor the step leaves alone is not run, and the commonest steps of instance-level monitors
  (an obligation opened, obligations discharged) are taken without ``update``'s lookups.
* Data atoms are read once per path and event, by tests compiled once per rule set; ``prev()``
  reads the values kept from the last event, and the label set with the data atoms that hold is
  interned.

A row entry is learnt from the first step that meets it, by running the monitors' ``update``.
A monitor's next configuration, and whether it changes, are functions of its configuration and
of the atoms and data atoms of its rule that the step holds (automaton states, past-memory
carries and formulas are interned), which is what makes the memo exact; the steps it takes
without ``update`` are worked out from the automata as ``update`` works them out.
``tests/monitor/test_fast_path.py`` checks all of it against ``SessionMonitor``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from studio.logic.events import MISSING, read_path
from studio.logic.formula import FALSE, TRUE, Formula

from .monitors import InstanceMonitor
from .session import RuleSet, SessionMonitor, _snapshot

# A rule tells apart at most this many label sets in its rows (steps with further ones are
# worked out each time).
NODE_ROW_LIMIT = 4096
# Interned configurations per rule, and label sets with data atoms, kept before starting afresh.
NODE_LIMIT = 20_000
LABELS_LIMIT = 100_000

QUIET = "quiet"  # a row's mark for "this step changes nothing but the step counters"


class RuleNode:
    """One configuration of a rule's monitors.  ``row[key]`` (``key``: the rule's ``LabelKeys``
    key of a label set) is ``None`` (or past the end of the row) for a step not met yet,
    ``QUIET``, or ``(next node, TRAC changes, violation monitor step)`` where the last is
    ``False`` (unchanged), ``True`` (run ``update``) or an ``_instance_step``.  A list: quicker
    to index than a dict is to search."""

    __slots__ = ("config", "row")

    def __init__(self, config: tuple):
        self.config = config
        self.row: list = []


def relevant_items(formula: Formula) -> tuple:
    """What a rule's monitors read in a label set: its atoms' names (inside past operators too)
    and its data atoms.  Their next configuration depends on nothing else."""
    subformulas = formula.subformulas()
    return (tuple(sorted({g.name for g in subformulas if g.op == "atom"}))
            + tuple(g for g in subformulas if g.op == "cmp"))


class LabelKeys:
    """Per label set, one key per rule: the rule's relevant items the set holds, numbered in
    the order the rule first met them (0 for none of them, then 1, 2, ...), so that rows stay
    as short as the number of label sets the rule can tell apart.  Numbers are never reused;
    past ``NODE_ROW_LIMIT`` of them a rule's further label sets all get ``NODE_ROW_LIMIT``, a
    key no row reaches.

    ``of`` also gives the rules the label set touches (a bit per rule whose key is not 0): a
    rule whose node does nothing on a step that holds none of its items (``sleeps``) need
    not be looked at on such a step, and most steps hold the items of only a few rules."""

    def __init__(self, ruleset: RuleSet):
        self.items = [relevant_items(rule.formula) for rule in ruleset.rules]
        self.numbers: list[dict[frozenset, int]] = [{frozenset(): 0} for _ in ruleset.rules]
        self.table: dict[frozenset, tuple[tuple[int, ...], int]] = {}
        self.orders: dict[int, tuple[int, ...]] = {}

    def of(self, labels: frozenset) -> tuple[tuple[int, ...], int]:
        """The label set's keys, and the bits of the rules whose key is not 0."""
        found = self.table.get(labels)
        if found is None:
            if len(self.table) >= LABELS_LIMIT:
                self.table.clear()
            keys = tuple(
                self._number(numbers, frozenset(item for item in items if item in labels))
                for items, numbers in zip(self.items, self.numbers))
            touched = 0
            for i, key in enumerate(keys):
                if key:
                    touched |= 1 << i
            found = self.table[labels] = (keys, touched)
        return found

    def order(self, bits: int) -> tuple[int, ...]:
        """The rules whose bits are set, in rule order."""
        found = self.orders.get(bits)
        if found is None:
            if len(self.orders) >= LABELS_LIMIT:
                self.orders.clear()
            found = self.orders[bits] = tuple(i for i in range(bits.bit_length())
                                              if bits >> i & 1)
        return found

    @staticmethod
    def _number(numbers: dict, held: frozenset) -> int:
        found = numbers.get(held)
        if found is None:
            if len(numbers) >= NODE_ROW_LIMIT:
                return NODE_ROW_LIMIT
            found = numbers[held] = len(numbers)
        return found


def sleeps(node: RuleNode) -> bool:
    """Whether a step that holds none of the rule's items is known to leave ``node`` alone."""
    row = node.row
    return bool(row) and row[0] is QUIET


def rule_node(ruleset: RuleSet, rule_index: int, config: tuple) -> RuleNode:
    table = ruleset.rule_nodes[rule_index]
    found = table.get(config)
    if found is None:
        if len(table) >= NODE_LIMIT:
            table.clear()  # nodes in use stay valid: a node only ever stands for its config
        found = table[config] = RuleNode(config)
    return found


# ---------------------------------------------------------------------------------------------
# Data atoms

# A value's kind as ``studio.logic.events.compare`` sees it (by exact type).
_KIND_TYPES = {"null": (type(None),), "bool": (bool,), "number": (int, float), "string": (str,)}
_KIND_OF = {t: kind for kind, types in _KIND_TYPES.items() for t in types}
_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def holds(op: str, left: Any, right: Any) -> bool:
    """``compare``'s verdict on operands already read (``MISSING`` when absent)."""
    if left is MISSING or right is MISSING:
        return False
    kind = _KIND_OF.get(type(left), "other")
    same_kind = kind == _KIND_OF.get(type(right), "other")
    if op == "==":
        return same_kind and left == right
    if op == "!=":
        return not (same_kind and left == right)
    if not same_kind or kind not in ("number", "string"):
        return False
    return _ORDER[op](left, right)


def read(root: Any, parts: tuple[str, ...], path: str) -> Any:
    """``read_path(root, path)``: plain dicts walked here, anything else left to it."""
    value = root
    for part in parts:
        if type(value) is not dict:
            return read_path(root, path)
        value = value.get(part, MISSING)
        if value is MISSING:
            return MISSING
    return value


# (the event's values at the paths read, the previous event's at the same positions) -> holds
Test = Callable[[list, list], bool]


def _against_const(index: int, op: str, const: Any, const_first: bool) -> Test:
    """A path compared with a constant, the usual data atom, with the constant's kind known."""
    kind = _KIND_OF.get(type(const))
    if kind is None:
        if const_first:
            return lambda values, before: holds(op, const, values[index])
        return lambda values, before: holds(op, values[index], const)
    types = _KIND_TYPES[kind]
    if op == "==":
        return lambda values, before: (type(values[index]) in types
                                       and (const == values[index] if const_first
                                            else values[index] == const))
    if op == "!=":
        def differs(values, before):
            value = values[index]
            if value is MISSING:
                return False
            return not (type(value) in types
                        and (const == value if const_first else value == const))
        return differs
    if kind not in ("number", "string"):
        return lambda values, before: False
    order = _ORDER[op]
    if const_first:
        return lambda values, before: (type(values[index]) in types
                                       and order(const, values[index]))
    return lambda values, before: type(values[index]) in types and order(values[index], const)


def _compile_test(comparison: Formula, index: dict[str, int]) -> Test:
    payload = comparison.payload
    left, op, right = payload.left, payload.op, payload.right
    if left[0] == "path" and right[0] == "const":
        return _against_const(index[left[1]], op, right[1], False)
    if left[0] == "const" and right[0] == "path":
        return _against_const(index[right[1]], op, left[1], True)
    kinds = (left[0], right[0])
    if "const" not in kinds:  # paths of this event or the previous one: no constant
        left_at, right_at = index[left[1]], index[right[1]]
        if kinds == ("path", "prev"):
            return lambda values, before: holds(op, values[left_at], before[right_at])
        if kinds == ("prev", "path"):
            return lambda values, before: holds(op, before[left_at], values[right_at])
        if kinds == ("path", "path"):
            return lambda values, before: holds(op, values[left_at], values[right_at])
        return lambda values, before: holds(op, before[left_at], before[right_at])
    read_left, read_right = _operand_reader(left, index), _operand_reader(right, index)
    return lambda values, before: holds(op, read_left(values, before), read_right(values, before))


def _operand_reader(operand: tuple, index: dict[str, int]) -> Callable[[list, list], Any]:
    kind, value = operand
    if kind == "const":
        return lambda values, before: value
    position = index[value]
    if kind == "path":
        return lambda values, before: values[position]
    return lambda values, before: before[position]


class DataAtoms:
    """A rule set's data atoms, compiled.  Every path an atom reads, in this event or through
    ``prev()``, has a position; an event's values are read once into a list by position, and
    the previous event's values at the same positions serve ``prev()``.  ``read`` gives the
    event's interned label set (what ``SessionMonitor.labels_for`` gives) and its values;
    ``snapshot`` turns values into the nested dict ``SessionMonitor`` keeps as ``previous``."""

    def __init__(self, ruleset: RuleSet):
        self.ruleset = ruleset
        self.comparisons = ruleset.comparisons
        self.prev_paths = ruleset.prev_paths
        paths = sorted({operand[1] for c in self.comparisons
                        for operand in (c.payload.left, c.payload.right)
                        if operand[0] != "const"})
        index = {path: i for i, path in enumerate(paths)}
        # Paths of two parts (``data.amount``) read their head once per event: a head and its
        # fields (position, field, path); the other paths are read one by one.
        self.heads: dict[str, list[tuple[int, str, str]]] = {}
        self.others: list[tuple[int, tuple, str]] = []
        for position, path in enumerate(paths):
            parts = tuple(path.split("."))
            if len(parts) == 2:
                self.heads.setdefault(parts[0], []).append((position, parts[1], path))
            else:
                self.others.append((position, parts, path))
        self.heads_list = list(self.heads.items())
        self.width = len(paths)
        self.tests = [_compile_test(c, index) for c in self.comparisons]
        self.prev_at = [(tuple(path.split(".")), path, index[path]) for path in self.prev_paths]
        self.nothing_before = [MISSING] * self.width  # before the first event
        # Read back from the snapshot, the previous values are the ones read unless one prev()
        # path extends another (SessionMonitor's nested dict then has its own rules): in that
        # case prev() reads the snapshot itself, as compare() does.
        self.nested_prev = any(a != b and b[:len(a)] == a
                               for a, _, _ in self.prev_at for b, _, _ in self.prev_at)
        self._interned: dict[tuple, frozenset] = {}

    def read(self, event: Mapping, before: list) -> tuple[frozenset, list | None]:
        """The event's label set and its values (``before``: the previous event's)."""
        labels = self.ruleset.label_set(event.get("labels") or ())
        if not self.tests:
            return labels, None
        values = self.values(event)
        holding = 0
        bit = 1
        for test in self.tests:
            if test(values, before):
                holding |= bit
            bit <<= 1
        if holding:
            key = (labels, holding)
            found = self._interned.get(key)
            if found is None:
                if len(self._interned) >= LABELS_LIMIT:
                    self._interned.clear()
                found = self._interned[key] = labels.union(
                    c for i, c in enumerate(self.comparisons) if holding >> i & 1)
            labels = found
        return labels, values

    def values(self, event: Mapping) -> list:
        """The event's value at every path read (``MISSING`` where there is none)."""
        values = [MISSING] * self.width
        plain = type(event) is dict
        for head, fields in self.heads_list:
            sub = event.get(head, MISSING) if plain else MISSING
            if type(sub) is dict:
                for position, field, _ in fields:
                    values[position] = sub.get(field, MISSING)
            elif sub is not MISSING or not plain:
                for position, _, path in fields:
                    values[position] = read_path(event, path)
        for position, parts, path in self.others:
            values[position] = read(event, parts, path)
        return values

    def values_before(self, previous: Any) -> list:
        """What prev() reads in a snapshot (``previous``), by position."""
        if previous is None:
            return self.nothing_before
        values = [MISSING] * self.width
        for parts, path, position in self.prev_at:
            values[position] = read(previous, parts, path)
        return values

    def snapshot(self, values: list) -> dict:
        """``SessionMonitor``'s snapshot of the event the values were read from (not for
        nested prev() paths, where it is ``_snapshot`` of the event)."""
        out: dict = {}
        for parts, _, position in self.prev_at:
            value = values[position]
            if value is MISSING:
                continue
            node = out
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = value
        return out


def compile_for_fast(ruleset: RuleSet) -> tuple[DataAtoms, LabelKeys]:
    """The rule set's compiled data atoms and label keys, built once and kept on it."""
    found = ruleset.compiled_for_fast
    if found is None:
        found = ruleset.compiled_for_fast = (DataAtoms(ruleset), LabelKeys(ruleset))
    return found


# ---------------------------------------------------------------------------------------------
# Steps of instance-level monitors that need no ``update``

OPEN, DISCHARGE = "open", "discharge"


def _instance_step(monitor: InstanceMonitor, config: tuple, labels: frozenset) -> Any:
    """What a step does to an instance monitor in ``config`` (its configuration before the
    step, the step being one that changes it): ``(OPEN, state)`` when it only opens the step's
    obligation, in ``state``; ``(DISCHARGE, states)`` when it only satisfies the obligations of
    ``states``; ``True`` (run ``update``) otherwise.  Worked out as ``update`` does, from the
    automata, so it depends on the configuration and the relevant labels alone."""
    carry, groups = config
    full = labels
    if monitor.tracker is not None:
        next_carry, full = monitor.tracker.advance(carry, labels)
        if next_carry is not carry:
            return True
    step = monitor.automaton.step
    moved = [(state, nxt) for state in groups if (nxt := step(state, full)) is not state]
    first = step(monitor.automaton.initial, full)
    if not moved:
        if first.residual is TRUE or first.residual is FALSE:
            return True
        return (OPEN, first)
    if first.residual is TRUE and all(nxt.residual is TRUE for _, nxt in moved):
        return (DISCHARGE, tuple(state for state, _ in moved))
    return True


# ---------------------------------------------------------------------------------------------
# The monitor

class FastSessionMonitor(SessionMonitor):
    """``SessionMonitor`` with every rule's configuration followed as a ``RuleNode``."""

    def _start_memo(self) -> None:
        ruleset = self.ruleset
        self._nodes = [rule_node(ruleset, i, (trac.config(), other.config()))
                       for i, (trac, other) in enumerate(zip(self.trac, self.violation_monitors))]
        self._data, self._keys = compile_for_fast(ruleset)
        # A bit per rule whose node does not sleep: it is looked at on every step.
        self._awake = sum(1 << i for i, node in enumerate(self._nodes) if not sleeps(node))
        # A bit per rule whose monitors are shared with a fork (``fork``: copy on write).
        self._shared = 0

    def fork(self) -> FastSessionMonitor:
        """``SessionMonitor.fork``, copy on write: the fork shares every rule's monitors with
        this one until a step changes them (then that rule's are copied, by whichever of the
        two steps first), so a candidate step that moves three of twenty rules copies three."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other.trac = list(self.trac)
        other.violation_monitors = list(self.violation_monitors)
        other._nodes = list(self._nodes)   # interned: shared with every session
        self._shared = other._shared = (1 << len(self.trac)) - 1
        return other

    def _own(self, i: int) -> None:
        """Copy rule ``i``'s monitors if they are shared with a fork (before changing them)."""
        self.trac[i] = self.trac[i].fork()
        self.violation_monitors[i] = self.violation_monitors[i].fork()
        self._shared &= ~(1 << i)

    def _own_all(self) -> None:
        for i in range(len(self.trac)):
            if self._shared >> i & 1:
                self._own(i)

    def _sync(self) -> None:
        if self._shared:
            self._own_all()
        super()._sync()

    def forget_history(self) -> None:
        # Only a shared rule with something to forget is copied first: forgetting nothing
        # changes nothing (a live monitor forked for a question would else copy every rule
        # at its next delivery).
        if self._shared:
            for i, (trac, other) in enumerate(zip(self.trac, self.violation_monitors)):
                if self._shared >> i & 1 and _has_history(trac, other):
                    self._own(i)
        super().forget_history()

    # ``previous`` (the snapshot prev() reads) is kept as the values read from the last event
    # and built as SessionMonitor's nested dict only when someone asks for it (to_json).

    @property
    def previous(self) -> dict | None:
        if self._unbuilt_snapshot:
            self._previous = self._data.snapshot(self._before)
            self._unbuilt_snapshot = False
        return self._previous

    @previous.setter
    def previous(self, snapshot: dict | None) -> None:
        self._previous = snapshot
        self._before = None  # worked out from the snapshot when next needed
        self._unbuilt_snapshot = False

    def labels_for(self, event: Mapping) -> frozenset:
        return self._data.read(event, self._values_before())[0]

    def _values_before(self) -> list:
        if self._before is None:
            self._before = self._data.values_before(self.previous)
        return self._before

    def feed(self, event: Mapping) -> list[dict]:
        changes: list[dict] = []
        self._feed(event, changes)
        return changes

    def ingest(self, event: Mapping) -> None:
        """``feed`` without the list of changes (an audit reads the results at the end)."""
        self._feed(event, None)

    def _feed(self, event: Mapping, changes: list | None) -> None:
        data = self._data
        before = self._before
        labels, values = data.read(event, before if before is not None else self._values_before())
        if data.prev_paths:
            if data.nested_prev:
                self.previous = _snapshot(event, data.prev_paths)
            else:
                self._before = values
                self._unbuilt_snapshot = True
        if self.witnesses:
            self._step(labels, event.get("input"), event.get("output"), changes)
        else:
            self._step(labels, None, None, changes)

    def _advance(self, labels: frozenset, input: Any, output: Any) -> list[dict]:
        changes: list[dict] = []
        self._step(labels, input, output, changes)
        return changes

    def _step(self, labels: frozenset, input: Any, output: Any, changes: list | None) -> None:
        step = self.steps
        self.steps = step + 1
        self.label_sets.add(labels)
        label_keys = self._keys
        keys, touched = label_keys.table.get(labels) or label_keys.of(labels)
        awake = self._awake
        visit = touched | awake
        if not visit:
            return
        nodes = self._nodes
        # Only rules the step touches and rules awake: every other rule's node sleeps on a
        # step holding none of its items (its row says QUIET), as the loop would find.
        try:
            for i in label_keys.orders.get(visit) or label_keys.order(visit):
                node = nodes[i]
                try:
                    move = node.row[keys[i]]
                except IndexError:  # a key the row has not reached yet
                    move = None
                if move is QUIET:
                    if not keys[i]:  # awake when it became current; learnt to sleep since
                        awake &= ~(1 << i)
                    continue
                if move is None:
                    nxt = nodes[i] = self._learn(i, node, step, labels, keys[i], input, output,
                                                 changes)
                else:
                    nxt, trac_changes, other_step = move
                    if (trac_changes or other_step) and self._shared >> i & 1:
                        self._own(i)
                    if trac_changes:
                        trac = self.trac[i]
                        trac.steps = step  # skipped steps left the counters behind
                        trac.update(labels, input, output)
                        if changes is not None and trac.state.decided:  # moved: newly decided
                            changes.append({"rule": trac.machines.rule.name, "step": step,
                                            "verdict": trac.state.verdict})
                    if other_step is True:
                        other = self.violation_monitors[i]
                        other.steps = step
                        if changes is None:
                            other.update(labels, input, output)
                        else:
                            found = len(other.violations)
                            other.update(labels, input, output)
                            if len(other.violations) != found:
                                name = other.machines.rule.name
                                changes.extend({"rule": name, "step": step,
                                                "violation": {"trigger": v.trigger,
                                                              "detected": v.detected}}
                                               for v in other.violations[found:])
                    elif other_step:  # known to open an obligation or discharge some
                        kind, argument = other_step
                        if kind is OPEN:
                            self.violation_monitors[i].open_obligation(argument, step, labels,
                                                                       input, output)
                        else:
                            self.violation_monitors[i].discharge(argument)
                    nodes[i] = nxt
                row = nxt.row
                if row and row[0] is QUIET:
                    awake &= ~(1 << i)
                else:
                    awake |= 1 << i
        finally:  # also when a monitor fails mid-step: no rule is left asleep wrongly
            self._awake = awake

    def _learn(self, i: int, node: RuleNode, step: int, labels: frozenset, key: int,
               input: Any, output: Any, changes: list | None) -> RuleNode:
        """Run rule ``i``'s monitors on a step its node has not met, and remember the move."""
        if self._shared >> i & 1:
            self._own(i)
        trac, other = self.trac[i], self.violation_monitors[i]
        self._run_rule(trac, other, step, labels, input, output,
                       changes if changes is not None else [])
        if not (trac.touched or other.touched):
            nxt, move = node, QUIET
        else:
            nxt = rule_node(self.ruleset, i, (trac.config(), other.config()))
            other_step = other.touched
            if other_step and isinstance(other, InstanceMonitor) and key < NODE_ROW_LIMIT:
                other_step = _instance_step(other, node.config[1], labels)
            move = (nxt, trac.touched, other_step)
        if key < NODE_ROW_LIMIT:
            row = node.row
            if key >= len(row):
                row.extend([None] * (key + 1 - len(row)))
            row[key] = move
        return nxt


def _has_history(trac, other) -> bool:
    """Whether ``SessionMonitor.forget_history`` would change this rule's monitors."""
    return bool(trac._w_steps or trac._w_payload or other.violations
                or getattr(other, "witness", None))
