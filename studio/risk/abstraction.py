"""Abstract states from monitored sessions, with no modelling by the user (paper 004, section 3.2).

An abstract state is what the rule set itself distinguishes at a step: the atoms the rules read
that hold there (data atoms by their text), and each rule's monitor configuration - the residual
of its violation monitor (TRAC_R, or instance-level monitoring for ``G phi`` rules, as the rule's
counting says), the past operators' memory, and whether the rule has settled or restarted.  So
"a payment is pending approval" is a state: the residual still owes the approval.  The user may
narrow the atoms to those they pick; the monitor configurations always stay.

A state is unsafe for a rule when the rule's verdict at that step is violated (a violation found
there, or a violation that stands).  Every session starts in the start state (the monitors'
initial configuration) and, with ``end_of_session``, ends in an end state that records which
rules the end of the session violates (an obligation still open, per LTLf).

Domain predicates (``studio.risk.predicates``, section 3.2) chosen for the workspace add their
truth at the step to the state (``features``, in the order of the predicates; a state merged
into a coarser one keeps only the first few, see ``Traces.merged``).  The monitors do not read
them, so they never make a transition invalid: a successor may have any features.

Validity (what smoothing may add): a transition i -> j is valid when some label set whose picked
atoms are j's takes every rule's monitor from i's configuration to j's, with j's verdicts, and no
declared exclusion forbids that label set (for example two tool calls in one step).  The monitors
are deterministic, so with no narrowing the label set is j's own.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from studio.logic.formula import FALSE
from studio.monitor import InstanceMonitor, RuleSet, SessionMonitor, TracR

from .predicates import Predicate, action_of, history_needed

# With more unpicked atoms than this, validity tries the label sets seen in the sessions instead
# of every subset of the unpicked atoms.
HIDDEN_ATOM_ENUMERATION_LIMIT = 10
# Rule steps kept for stepping abstract states (a long-lived guard process asks forever).
RULE_STEP_CACHE_LIMIT = 200_000


@dataclass(frozen=True)
class AbstractState:
    kind: str                       # "start", "step" or "end"
    labels: tuple[str, ...]         # the picked atoms holding at the step, sorted
    monitors: tuple[tuple, ...]     # per rule, its monitor's configuration (text and flags)
    violated: tuple[bool, ...]      # per rule, violated at this step (at the end, by ending)
    features: tuple[bool, ...] = ()  # per domain predicate (the first few), true at the step

    def to_json(self) -> dict:
        data = {"kind": self.kind, "labels": list(self.labels),
                "monitors": [list(m) for m in self.monitors], "violated": list(self.violated)}
        if self.features:
            data["features"] = list(self.features)
        return data

    @classmethod
    def from_json(cls, data: Mapping) -> AbstractState:
        return cls(data["kind"], tuple(data["labels"]),
                   tuple(_frozen(m) for m in data["monitors"]), tuple(data["violated"]),
                   tuple(bool(f) for f in data.get("features", ())))

    def coarser(self) -> AbstractState | None:
        """The same state with its last predicate's truth forgotten (None: it has none)."""
        if not self.features:
            return None
        return AbstractState(self.kind, self.labels, self.monitors, self.violated,
                             self.features[:-1])


def _frozen(value):
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def monitor_config(monitor) -> tuple:
    """A violation monitor's configuration as text and flags: equal configurations behave the
    same on every future step."""
    carry = monitor.carry
    carry_values = tuple(carry.values) if carry is not None else None
    if isinstance(monitor, InstanceMonitor):
        return ("instances", carry_values,
                tuple(sorted(state.residual.text for state in monitor.groups)))
    return ("round", monitor.state.residual.text, carry_values, monitor.settled,
            monitor.round_start > 0)


def _violated_now(monitor, found_now: bool) -> bool:
    if found_now:
        return True
    return isinstance(monitor, TracR) and monitor.settled and monitor.state.residual is FALSE


class Abstraction:
    """The abstraction of one rule set (optionally narrowed to picked atoms)."""

    def __init__(self, ruleset: RuleSet, atoms: Iterable[str] | None = None,
                 exclusions: Iterable[Iterable[str]] = (), end_of_session: bool = True,
                 predicates: Iterable[Predicate] = ()):
        self.ruleset = ruleset
        self.predicates: tuple[Predicate, ...] = tuple(predicates)
        self.history = history_needed(self.predicates)
        self.rules = [rule.name for rule in ruleset.rules]
        # Everything the rules read, by text: plain atoms and data atoms (comparisons).
        # (``rule.atoms`` counts a past subformula as one computed atom: look inside.)
        self.readable: dict[str, object] = {
            g.name: g.name for rule in ruleset.rules for g in rule.formula.subformulas()
            if g.op == "atom"}
        self.readable.update((c.text, c) for c in ruleset.comparisons)
        if atoms is None:
            picked = set(self.readable)
        else:
            picked = set(atoms)
            unknown = sorted(picked - set(self.readable))
            if unknown:
                raise ValueError(f"atoms: {', '.join(unknown)} not read by any rule of the set "
                                 f"(the rules read: {', '.join(sorted(self.readable))})")
        self.picked = frozenset(picked)
        self.hidden = tuple(sorted(set(self.readable) - self.picked))
        self.exclusions = [frozenset(group) for group in exclusions]
        for k, group in enumerate(self.exclusions):
            if len(group) < 2:
                raise ValueError(f"exclusions[{k}]: an exclusion names two atoms or more")
        self.end_of_session = end_of_session
        self._rule_reads = [frozenset(g.name if g.op == "atom" else g.text
                                      for g in rule.formula.subformulas()
                                      if g.op in ("atom", "cmp"))
                            for rule in ruleset.rules]
        self.seen_label_sets: set[tuple[str, ...]] = set()   # full (readable) label sets
        self._rule_steps: dict[tuple, tuple[tuple, bool]] = {}
        self._rule_ends: dict[tuple, bool] = {}

    # -- states of sessions ---------------------------------------------------------------

    def start(self) -> AbstractState:
        monitor = SessionMonitor(self.ruleset, witnesses=False)
        return AbstractState("start", (),
                             tuple(monitor_config(m) for m in monitor.violation_monitors),
                             tuple(False for _ in self.rules))

    def _readable_texts(self, labels: Iterable) -> tuple[str, ...]:
        texts = (x if isinstance(x, str) else x.text for x in labels)
        return tuple(sorted(t for t in texts if t in self.readable))

    def current(self, monitor: SessionMonitor, labels: Iterable = (),
                found: Iterable[str] = ()) -> AbstractState:
        """The abstract state of a session monitor after a step with ``labels`` in which the
        rules named in ``found`` reported a violation."""
        found = set(found)
        full = self._readable_texts(labels)
        return AbstractState(
            "step" if monitor.steps else "start",
            tuple(t for t in full if t in self.picked),
            tuple(monitor_config(m) for m in monitor.violation_monitors),
            tuple(_violated_now(m, name in found)
                  for name, m in zip(self.rules, monitor.violation_monitors)))

    def features(self, event: Mapping, recent: Sequence[str | None] = ()) -> tuple[bool, ...]:
        """The domain predicates' truth at ``event`` (a labelled monitor event); ``recent``: the
        actions of the steps before it, the latest last (``self.history`` of them are read)."""
        return tuple(p.holds(event, recent) for p in self.predicates)

    def session(self, events: Iterable[Mapping]) -> list[AbstractState]:
        """The abstract trace of one session: the start state, one state per event and, with
        ``end_of_session``, the end state."""
        monitor = SessionMonitor(self.ruleset, witnesses=False)
        trace = [self.start()]
        recent: list[str | None] = []
        for event in events:
            labels = monitor.labels_for(event)
            changes = monitor.feed(event)
            self.seen_label_sets.add(self._readable_texts(labels))
            state = self.current(monitor, labels,
                                 (c["rule"] for c in changes if "violation" in c))
            if self.predicates:
                state = AbstractState(state.kind, state.labels, state.monitors, state.violated,
                                      self.features(event, recent))
                if self.history:
                    recent = (recent + [action_of(event)])[-self.history:]
            trace.append(state)
        if self.end_of_session and len(trace) > 1:
            trace.append(self.end(trace[-1]))
        return trace

    # -- stepping abstract states (validity, prediction) ------------------------------------

    def _restore(self, index: int, config: tuple):
        machines = self.ruleset.machines[index]
        if config[0] == "instances":
            _, carry, residuals = config
            return InstanceMonitor.from_json(machines, {
                "steps": 1, "carry": list(carry) if carry is not None else None,
                "groups": [{"residual": r, "obligations": [{"trigger": 0, "witness": []}]}
                           for r in residuals],
                "violations": []}, witnesses=False)
        _, residual, carry, settled, restarted = config
        return TracR.from_json(machines, {
            "residual": residual, "carry": list(carry) if carry is not None else None,
            "steps": 1, "round_start": 1 if restarted else 0, "settled": settled,
            "witness": [], "violations": [], "satisfactions": []})

    def _rule_step(self, index: int, config: tuple, labels: tuple[str, ...]
                   ) -> tuple[tuple, bool]:
        # A rule's step depends only on the atoms it reads: the key is that part of the labels,
        # so a live decision finds its answer here though the whole label set is new.
        reads = self._rule_reads[index]
        labels = tuple(t for t in labels if t in reads)
        key = (index, config, labels)
        found = self._rule_steps.get(key)
        if found is None:
            if len(self._rule_steps) >= RULE_STEP_CACHE_LIMIT:
                self._rule_steps.clear()
            monitor = self._restore(index, config)
            label_set = self.ruleset.label_set(self.readable[t] for t in labels)
            verdict = monitor.update(label_set)
            violated = verdict > 0 if isinstance(monitor, InstanceMonitor) else (
                verdict == "violated")
            found = self._rule_steps[key] = (monitor_config(monitor), violated)
        return found

    def step(self, state: AbstractState, labels: Iterable,
             features: tuple[bool, ...] = ()) -> AbstractState:
        """The state after ``state`` when the next step's labels are ``labels`` (names of atoms
        and data atoms, or a label set from ``SessionMonitor.labels_for``) and its domain
        predicates' truth ``features`` (``self.features`` of the step's event)."""
        if state.kind == "end":
            raise ValueError("a session that ended takes no further step")
        full = self._readable_texts(labels)
        moved = [self._rule_step(i, config, full) for i, config in enumerate(state.monitors)]
        return AbstractState("step", tuple(t for t in full if t in self.picked),
                             tuple(c for c, _ in moved), tuple(v for _, v in moved),
                             tuple(features))

    def end(self, state: AbstractState) -> AbstractState:
        """The end state a session reaches by ending in ``state``."""
        violated = []
        for index, config in enumerate(state.monitors):
            key = (index, config)
            found = self._rule_ends.get(key)
            if found is None:
                found = self._rule_ends[key] = bool(
                    self._restore(index, config).end_violations())
            violated.append(found)
        return AbstractState("end", (), (), tuple(violated))

    def allowed(self, labels: Iterable[str]) -> bool:
        """No declared exclusion forbids these atoms holding together in one step."""
        present = set(labels)
        return all(len(group & present) < 2 for group in self.exclusions)

    def candidate_label_sets(self, states: Sequence[AbstractState]) -> list[tuple[str, ...]]:
        """Full label sets a step may carry, for validity: the picked part of some state
        completed by every subset of the unpicked atoms (or by what the sessions showed)."""
        visible = {s.labels for s in states if s.kind == "step"}
        if not self.hidden:
            candidates = visible
        elif len(self.hidden) <= HIDDEN_ATOM_ENUMERATION_LIMIT:
            candidates = {tuple(sorted(v + extra)) for v in visible
                          for size in range(len(self.hidden) + 1)
                          for extra in itertools.combinations(self.hidden, size)}
        else:
            candidates = set(self.seen_label_sets)
        return sorted(c for c in candidates if self.allowed(c))

    def valid_transitions(self, states: Sequence[AbstractState]) -> sp.csr_matrix:
        """The states x states matrix of valid transitions (1 where valid).

        For each candidate label set, every state's successor is worked out at once, in numpy:
        each rule's configurations are numbered, states sharing every rule's configuration are
        one row, the rule's step under the label set becomes a table from numbers to numbers
        (kept per part of the labels the rule reads: label sets that differ elsewhere share
        it), and each row's successor is found among the states with the same picked atoms by a
        hash of its numbers, then checked exactly.  Each rule steps once per (configuration,
        atoms it reads), and no state is built per candidate: 53,000 states (10^7 valid
        transitions) take seconds."""
        n = len(states)
        rules = len(self.rules)
        sources: list[np.ndarray] = []
        targets: list[np.ndarray] = []
        moving = np.array([i for i, s in enumerate(states) if s.kind != "end"], dtype=np.int64)
        if len(moving) and rules:
            numbers: list[dict] = [{} for _ in range(rules)]
            configs: list[list] = [[] for _ in range(rules)]
            table = np.zeros((n, rules), dtype=np.int64)
            for i, state in enumerate(states):
                if state.kind == "end":
                    continue
                for r, config in enumerate(state.monitors):
                    found = numbers[r].get(config)
                    if found is None:
                        found = numbers[r][config] = len(configs[r])
                        configs[r].append(config)
                    table[i, r] = found
            violated = np.array([s.violated if s.kind != "end" else (False,) * rules
                                 for s in states], dtype=np.int64).reshape(n, rules)
            weights = _hash_weights(rules)
            hashes = table @ weights[0] + violated @ weights[1]   # wraps: fine for a hash
            receivers = {labels: _Receivers(np.asarray(found, dtype=np.int64), hashes)
                         for labels, found in _step_states_by_labels(states).items()}
            # A successor depends only on the monitors' configurations, so states that share
            # theirs (and differ in atoms or flags) are stepped once, as one row.
            rows_table, row_of = np.unique(table[moving], axis=0, return_inverse=True)
            row_of = row_of.ravel()
            by_row = np.argsort(row_of, kind="stable")
            row_bounds = np.searchsorted(row_of[by_row], np.arange(len(rows_table) + 1))
            columns: list[dict] = [{} for _ in range(rules)]
            for labels in self.candidate_label_sets(states):
                group = receivers.get(tuple(t for t in labels if t in self.picked))
                if group is None:
                    continue
                # Per rule, each row's step under the part of the labels it reads (kept: label
                # sets differing elsewhere share it), summed into the successors' hashes.
                steps = [self._rule_step_column(r, labels, configs[r], numbers[r],
                                                rows_table[:, r], weights[:, r], columns[r])
                         for r in range(rules)]
                candidate_hashes = steps[0].hash_part.copy()
                possible = steps[0].known.copy()
                for step in steps[1:]:
                    candidate_hashes += step.hash_part
                    possible &= step.known
                # Every receiver with the hash: states that differ only in their predicates'
                # truth share one (any of them may follow), and so may a true collision.
                rows, found = group.lookup(candidate_hashes, possible)
                exact = np.ones(len(rows), dtype=bool)
                for r, step in enumerate(steps):
                    config = rows_table[rows, r]
                    exact &= ((table[found, r] == step.step_to[config])
                              & (violated[found, r] == step.step_violates[config]))
                rows, found = rows[exact], found[exact]
                # Every state of a matched row moves to the row's successor.
                starts = row_bounds[rows]
                counts = row_bounds[rows + 1] - starts
                shift = np.repeat(starts - (np.cumsum(counts) - counts), counts)
                members = by_row[shift + np.arange(int(counts.sum()))]
                sources.append(moving[members])
                targets.append(np.repeat(found, counts))
        if self.end_of_session:
            index = {s: i for i, s in enumerate(states)}
            ends_from, ends_to = [], []
            for i, state in enumerate(states):
                if state.kind == "step":
                    j = index.get(self.end(state))
                    if j is not None:
                        ends_from.append(i)
                        ends_to.append(j)
            sources.append(np.array(ends_from, dtype=np.int64))
            targets.append(np.array(ends_to, dtype=np.int64))
        all_sources = np.concatenate(sources) if sources else np.zeros(0, dtype=np.int64)
        all_targets = np.concatenate(targets) if targets else np.zeros(0, dtype=np.int64)
        valid = sp.csr_matrix((np.ones(len(all_sources)), (all_sources, all_targets)),
                              shape=(n, n))
        valid.sum_duplicates()
        valid.data[:] = 1.0
        return valid

    def _rule_step_column(self, index: int, labels: tuple[str, ...], configs: list,
                          numbers: dict, column: np.ndarray, weights: np.ndarray,
                          cache: dict) -> _RuleStep:
        """Rule ``index``'s step under ``labels`` for the configurations in ``column`` (numbers
        of its configurations), kept per part of the labels the rule reads."""
        reads = self._rule_reads[index]
        key = tuple(t for t in labels if t in reads)
        found = cache.get(key)
        if found is None:
            step_to = np.empty(len(configs), dtype=np.int64)
            step_violates = np.empty(len(configs), dtype=np.int64)
            for k, config in enumerate(configs):
                after, violates = self._rule_step(index, config, key)
                step_to[k] = numbers.get(after, -1)
                step_violates[k] = violates
            moved = step_to[column]
            found = cache[key] = _RuleStep(step_to, step_violates, moved >= 0,
                                           moved * weights[0] + step_violates[column] * weights[1])
        return found


@dataclass(frozen=True)
class _RuleStep:
    """One rule's step under one part of the labels: per configuration of the rule, and its
    share of the successor of each row of configurations (states that can move)."""

    step_to: np.ndarray         # per configuration, the number of the one it moves to (-1: one
    step_violates: np.ndarray   # no state has), and 1 where the step violates the rule
    known: np.ndarray           # per row: its successor's configuration is numbered
    hash_part: np.ndarray       # per row: the rule's share of the successor's hash


def _hash_weights(rules: int) -> np.ndarray:
    """Random 61-bit weights hashing a state's numbers (seeded: the same every run)."""
    rng = np.random.default_rng(20260521)
    return rng.integers(1, 2**61, size=(2, rules), dtype=np.int64)


def _step_states_by_labels(states: Sequence[AbstractState]) -> dict[tuple, list[int]]:
    out: dict[tuple, list[int]] = {}
    for j, state in enumerate(states):
        if state.kind == "step":
            out.setdefault(state.labels, []).append(j)
    return out


class _Receivers:
    """The step states with one set of picked atoms, searchable by hash."""

    def __init__(self, members: np.ndarray, hashes: np.ndarray):
        own = hashes[members]
        order = np.argsort(own, kind="stable")
        self.members = members[order]
        self.hashes = own[order]
        repeated = self.hashes[1:] == self.hashes[:-1]
        self.shared_hashes = (np.unique(self.hashes[1:][repeated]) if repeated.any()
                              else None)

    def lookup(self, wanted: np.ndarray, possible: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, members)``: every pair of a row of ``wanted`` (where ``possible``) and a
        member with its hash."""
        low = np.searchsorted(self.hashes, wanted, "left")
        if self.shared_hashes is None:   # one member per hash at most
            low[low == len(self.hashes)] = 0
            rows = np.flatnonzero(possible & (self.hashes[low] == wanted))
            return rows, self.members[low[rows]]
        high = np.searchsorted(self.hashes, wanted, "right")
        counts = np.where(possible, high - low, 0)
        rows = np.repeat(np.arange(len(wanted)), counts)
        starts = np.repeat(low - (np.cumsum(counts) - counts), counts)
        return rows, self.members[starts + np.arange(int(counts.sum()))]
