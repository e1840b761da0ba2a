"""Monitoring a rule set over one session: labeling events and running every rule's monitors.

``RuleSet`` compiles rules once and shares their automata across sessions.  ``SessionMonitor``
follows one session: for each event it builds the label set (the atoms the event lists, plus the
data atoms that hold on it, reading the previous event for ``prev(...)``), then advances, per rule,
TRAC without reset (verdict and residual) and either instance-level monitoring (``G phi`` rules) or
TRAC_R (the rest) for the violations.  ``studio.monitor.fast.FastSessionMonitor`` gives the same
results in less time per event; audits run it.
"""

from __future__ import annotations

import copy

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from studio.logic.events import MISSING, put_path, read_path
from studio.logic.formula import Formula
from studio.logic.progression import Progressor
from studio.logic.reads import condition_of

from .automaton import CompiledRule, RuleMachines, comparison_labels, compile_rule
from .monitors import SATISFIED, VIOLATED, InstanceMonitor, Trac, TracR, Violation
from .verdicts import session_verdict

_LABEL_INTERN_LIMIT = 100_000
# Bounds on the per-rule memo of steps that change nothing (see RuleSet.quiet_set).
_QUIET_CONFIG_LIMIT = 20_000
_QUIET_LABELS_LIMIT = 4_096


class RuleSet:
    """Compiled rules with their shared automata and the data atoms they read."""

    def __init__(self, rules: Iterable[CompiledRule | tuple[str, Formula | str]
                                       | tuple[str, Formula | str, str | None]]):
        """``rules``: compiled rules, or ``(name, formula)`` / ``(name, formula, counting)``."""
        compiled = [r if isinstance(r, CompiledRule) else compile_rule(*r) for r in rules]
        names = [r.name for r in compiled]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"rule names must be unique; repeated: {', '.join(duplicates)}")
        self.rules = compiled
        # Per rule, the condition that makes it apply (``condition_of``; None: throughout).
        self.conditions = [condition_of(rule.formula) for rule in compiled]
        self.progressor = Progressor()
        self.machines = [RuleMachines(rule, self.progressor) for rule in compiled]
        seen: dict[int, Formula] = {}
        for rule in compiled:
            for c in rule.comparisons:
                seen.setdefault(c.id, c)
        self.comparisons = tuple(seen.values())
        self.prev_paths = tuple(sorted({p for r in compiled for p in r.prev_paths}))
        self._interned: dict[tuple, frozenset] = {}
        # Per rule: for each configuration of its monitors, the label sets known to change
        # nothing but the step counter.  Shared by all sessions of the rule set.
        self._quiet: list[dict[tuple, set]] = [{} for _ in compiled]
        # For FastSessionMonitor (studio.monitor.fast): per rule, its interned configurations;
        # and what it compiles from the rules, built on first use.
        self.rule_nodes: list[dict] = [{} for _ in compiled]
        self.compiled_for_fast = None

    def quiet_set(self, rule_index: int, config: tuple) -> set:
        table = self._quiet[rule_index]
        found = table.get(config)
        if found is None:
            if len(table) >= _QUIET_CONFIG_LIMIT:
                table.clear()
            found = table[config] = set()
        return found

    def label_set(self, names: Iterable[str]) -> frozenset:
        """An interned frozenset of atom names: equal label sets are one object, so the
        automata's rows hash each of them once."""
        key = names if isinstance(names, tuple) else tuple(names)
        found = self._interned.get(key)
        if found is None:
            if len(self._interned) >= _LABEL_INTERN_LIMIT:
                self._interned.clear()
            found = self._interned[key] = frozenset(key)
        return found


@dataclass
class RuleResult:
    rule: str
    verdict: str
    first_verdict_step: int | None
    final: str
    residual: Formula
    violations: list[Violation] = field(default_factory=list)
    counting: str = ""

    def session_verdict(self, open: bool = False) -> str:
        """The rule's one verdict in the session (``verdicts.session_verdict``)."""
        return session_verdict(len(self.violations), self.final, open=open,
                               settled=self.verdict, counting=self.counting)

    def to_json(self) -> dict:
        return {"rule": self.rule, "verdict": self.verdict,
                "first_verdict_step": self.first_verdict_step, "final": self.final,
                "residual": self.residual.text, "counting": self.counting,
                "session_verdict": self.session_verdict(),
                "violations": [{"trigger": v.trigger, "detected": v.detected}
                               for v in self.violations]}


class SessionMonitor:
    """All rules of a rule set over one session."""

    def __init__(self, ruleset: RuleSet, witnesses: bool = True):
        self.ruleset = ruleset
        self.witnesses = witnesses
        self.steps = 0
        self.previous: dict | None = None  # the last event's values at the paths prev() reads
        self.trac = [Trac(m) for m in ruleset.machines]
        self.violation_monitors = [InstanceMonitor(m, witnesses) if m.rule.instance_level
                                   else TracR(m) for m in ruleset.machines]
        # Every distinct label set of a step since this monitor was made (interned by the rule
        # set, so a few per session): whether a rule's condition ever held (an audit's monitor
        # sees the whole session; ``results.session_results``).
        self.label_sets: set[frozenset] = set()
        self._start_memo()

    def labels_for(self, event: Mapping) -> frozenset:
        names = event.get("labels") or ()
        labels = self.ruleset.label_set(names)
        if self.ruleset.comparisons:
            holding = comparison_labels(self.ruleset.comparisons, event, self.previous)
            if holding:
                labels = labels.union(holding)
        return labels

    def feed(self, event: Mapping) -> list[dict]:
        """Monitor one event; returns what changed: verdicts reached and violations found."""
        labels = self.labels_for(event)
        if self.ruleset.prev_paths:
            self.previous = _snapshot(event, self.ruleset.prev_paths)
        keep = self.witnesses
        return self._advance(labels, event.get("input") if keep else None,
                             event.get("output") if keep else None)

    def feed_labels(self, labels: frozenset) -> list[dict]:
        """Monitor one pre-labelled step (no data atoms are read)."""
        return self._advance(labels, None, None)

    def _advance(self, labels: frozenset, input: Any, output: Any) -> list[dict]:
        """Run the rules a step can affect.  A rule whose monitors' configuration is known to
        ignore these labels is skipped: updating it would change nothing but the counters."""
        step = self.steps
        self.steps = step + 1
        self.label_sets.add(labels)
        changes: list[dict] = []
        quiet = self._quiet
        for i, known in enumerate(quiet):
            if known is not None and labels in known:
                continue
            trac, other = self.trac[i], self.violation_monitors[i]
            self._run_rule(trac, other, step, labels, input, output, changes)
            if not (trac.touched or other.touched):
                if known is None:
                    known = quiet[i] = self.ruleset.quiet_set(i, self._configs[i])
                if len(known) < _QUIET_LABELS_LIMIT:
                    known.add(labels)
                continue
            config = (trac.config(), other.config())
            if config != self._configs[i]:
                self._configs[i] = config
                quiet[i] = self.ruleset.quiet_set(i, config)
        return changes

    @staticmethod
    def _run_rule(trac, other, step, labels, input, output, changes) -> None:
        # Skipped steps left the counters behind; they only ever lag.
        trac.steps = other.steps = step
        decided = trac.state.decided
        trac.update(labels, input, output)
        if not decided and trac.state.decided:
            changes.append({"rule": trac.machines.rule.name, "step": step,
                            "verdict": trac.state.verdict})
        found = len(other.violations)
        other.update(labels, input, output)
        if len(other.violations) != found:
            name = trac.machines.rule.name
            changes.extend({"rule": name, "step": step,
                            "violation": {"trigger": v.trigger, "detected": v.detected}}
                           for v in other.violations[found:])

    def _start_memo(self) -> None:
        self._configs = [(t.config(), o.config())
                         for t, o in zip(self.trac, self.violation_monitors)]
        self._quiet: list[set | None] = [self.ruleset.quiet_set(i, c)
                                         for i, c in enumerate(self._configs)]

    def _sync(self) -> None:
        for trac, other in zip(self.trac, self.violation_monitors):
            trac.steps = other.steps = self.steps

    def results(self) -> list[RuleResult]:
        """Per rule: TRAC's verdict, the LTLf verdict if the session ends now, the residual and
        every violation (those found at steps and those the end of the session reveals)."""
        self._sync()
        out = []
        for trac, other in zip(self.trac, self.violation_monitors):
            violations = list(other.violations)
            if self.steps:
                violations += other.end_violations()
            violations.sort(key=lambda v: (v.detected, v.trigger))
            final = trac.final() if self.steps else (
                SATISFIED if trac.machines.rule.normal.empty_value else VIOLATED)
            rule = trac.machines.rule
            out.append(RuleResult(rule.name, trac.verdict, trac.first_verdict_step, final,
                                  trac.residual, violations, rule.counting))
        return out

    def forget_history(self) -> None:
        """Drop witnesses and the violations found so far, keeping what the next steps need
        (residuals, open obligations, past values).  A long-lived monitor (live ingestion)
        then costs no more to keep and save at step 10,000 than at step 10."""
        self.label_sets.clear()
        for trac, other in zip(self.trac, self.violation_monitors):
            trac.forget_witness()
            if isinstance(other, TracR):
                other.witness = []
            other.violations = []

    def to_json(self) -> dict:
        self._sync()
        return {"steps": self.steps, "previous": self.previous,
                "rules": [{"rule": t.machines.rule.name, "trac": t.to_json(),
                           "violations": o.to_json()}
                          for t, o in zip(self.trac, self.violation_monitors)]}

    def fork(self) -> SessionMonitor:
        """A copy of the monitors that steps on independently of this one, as
        ``from_json(ruleset, to_json())`` would give but without writing or parsing anything
        (the guard tries each candidate step on a fork of the session's monitors)."""
        other = copy.copy(self)
        other.trac = [t.fork() for t in self.trac]
        other.violation_monitors = [m.fork() for m in self.violation_monitors]
        other._fork_memo(self)
        return other

    def _fork_memo(self, source: SessionMonitor) -> None:
        self._configs = list(source._configs)
        self._quiet = list(source._quiet)

    @classmethod
    def from_json(cls, ruleset: RuleSet, data: dict, witnesses: bool = True) -> SessionMonitor:
        self = cls(ruleset, witnesses)
        saved = {r["rule"]: r for r in data["rules"]}
        missing = [m.rule.name for m in ruleset.machines if m.rule.name not in saved]
        if missing:
            raise ValueError(f"saved state has no monitor for rules: {', '.join(missing)}")
        self.steps = data["steps"]
        self.previous = data.get("previous")
        self.trac = []
        self.violation_monitors = []
        for machines in ruleset.machines:
            entry = saved[machines.rule.name]
            self.trac.append(Trac.from_json(machines, entry["trac"]))
            kind = InstanceMonitor if machines.rule.instance_level else TracR
            monitor = (InstanceMonitor.from_json(machines, entry["violations"], witnesses)
                       if kind is InstanceMonitor
                       else TracR.from_json(machines, entry["violations"]))
            self.violation_monitors.append(monitor)
        self._start_memo()
        return self


def _snapshot(event: Mapping, paths: tuple[str, ...]) -> dict:
    """The values prev() will read, as a small nested dict (JSON-ready, unlike the event)."""
    out: dict = {}
    for path in paths:
        value = read_path(event, path)
        if value is MISSING:
            continue
        put_path(out, path, value)
    return out
