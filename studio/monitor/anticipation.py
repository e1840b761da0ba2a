"""Anticipatory four-valued verdicts for the rules of a session (paper 002), next to TRAC.

``SessionAnticipation(monitor)`` follows a ``SessionMonitor`` (or ``FastSessionMonitor``): call
``observe(event)`` after each ``feed(event)``.  Per rule it keeps the four-valued verdict of the
rule's formula over the session as a whole, with no restart (TRAC's residual, not TRAC_R's),
the step after which it became permanent and a short reason (``studio.logic.anticipation``).

Cost: a rule's verdict is looked up only when its TRAC state (or, for rules reading ``prev()``,
the data context) changed since the last step, and never again once permanent; every state is
decided once per rule set (``Anticipator``, shared by the sessions of a rule set, like the
automata), so after warm-up a step is a few identity checks.

``permanently_violated(monitor)`` is the guard's question: the rules no continuation of the
session can satisfy any more, even where progression has not reached ``false``.
"""

from __future__ import annotations

import weakref
from typing import Any

from studio.logic.anticipation import (
    CURRENTLY_SATISFIED,
    PERMANENT,
    PERMANENTLY_SATISFIED,
    PERMANENTLY_VIOLATED,
    WORDS,
    RuleAnticipation,
    Verdict,
    for_monitor_rule,
)

from .session import RuleSet, SessionMonitor


MEMO_LIMIT = 50_000


class Anticipator:
    """The anticipation of every rule of a rule set; its caches serve all its sessions."""

    def __init__(self, ruleset: RuleSet, domain: tuple[int, int] | None = None):
        """``domain``: every data path holds a whole number in that range (tests only)."""
        self.ruleset = ruleset
        self.rules: list[RuleAnticipation] = [for_monitor_rule(r, domain)
                                              for r in ruleset.rules]
        # Per rule: the data frames when the rule reads prev() (its context changes per step).
        self.frames_prev = [ra.frames if ra.frames is not None and ra.frames.prev_paths else None
                            for ra in self.rules]
        # Per rule: (monitor state, context) -> verdict; states are interned by the automata.
        self.memo: list[dict] = [{} for _ in self.rules]

    def decide(self, i: int, state, context) -> Verdict:
        """The verdict of rule ``i`` in a TRAC state of its automaton, with a data context."""
        carry = state.carry
        verdict = self.rules[i].verdict(state.residual,
                                        carry.values if carry is not None else None, context)
        memo = self.memo[i]
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        memo[(state, context)] = verdict
        return verdict

    @property
    def smt_calls(self) -> int:
        return sum(ra.smt_calls for ra in self.rules)

    @property
    def searches(self) -> int:
        return sum(ra.searches for ra in self.rules)

    def stats(self) -> dict:
        return {"searches": self.searches, "smt_calls": self.smt_calls,
                "smt_cache_hits": sum(ra.frames.cache_hits for ra in self.rules
                                      if ra.frames is not None),
                "lookups": sum(ra.lookups for ra in self.rules)}


_anticipators: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def anticipator_for(ruleset: RuleSet) -> Anticipator:
    """The rule set's anticipator (one per rule set, built on first use)."""
    found = _anticipators.get(ruleset)
    if found is None:
        found = _anticipators[ruleset] = Anticipator(ruleset)
    return found


class SessionAnticipation:
    """Four-valued verdicts of every rule over one session; see the module documentation."""

    def __init__(self, monitor: SessionMonitor, anticipator: Anticipator | None = None, *,
                 resume: bool = True):
        """``resume``: when the monitor has taken steps already, observe its state now (the
        steps before are not seen: ``complete_step`` is then at most the current step)."""
        self.monitor = monitor
        self.anticipator = anticipator or anticipator_for(monitor.ruleset)
        n = len(self.anticipator.rules)
        self.verdicts: list[Verdict | None] = [None] * n
        self.since: list[int | None] = [None] * n   # the step after which it was permanent
        self._states: list[Any] = [None] * n
        self._contexts: list[Any] = [None] * n
        self._active = [(i, self.anticipator.frames_prev[i], self.anticipator.memo[i])
                        for i in range(n)]
        if monitor.steps and resume:
            self.observe()

    def observe(self, event: Any = None) -> list[dict]:
        """After the monitor took a step (``event``: the event it was fed, which ``prev()``
        reads next; by default the monitor's snapshot): the rules whose four-valued verdict
        changed, as ``{"rule", "step", "complete", "reason"}``."""
        monitor = self.monitor
        step = monitor.steps - 1
        tracs = monitor.trac
        states, contexts, verdicts = self._states, self._contexts, self.verdicts
        changes: list[dict] = []
        settled = False
        previous = event
        for i, frames, memo in self._active:
            state = tracs[i].state
            if frames is None:
                if state is states[i]:
                    continue
                context = ()
            else:
                if previous is None:
                    previous = monitor.previous or {}
                context = frames.context_of(previous) if step >= 0 else frames.initial
                if state is states[i] and context is contexts[i]:
                    continue  # (contexts are interned)
                contexts[i] = context
            states[i] = state
            verdict = memo.get((state, context))
            if verdict is None:
                verdict = self.anticipator.decide(i, state, context)
            old = verdicts[i]
            if verdict is not old:
                verdicts[i] = verdict
                if old is None or old.value != verdict.value:
                    changes.append({"rule": monitor.ruleset.rules[i].name, "step": step,
                                    "complete": verdict.value, "reason": verdict.reason})
            if step < 0:
                states[i] = contexts[i] = None  # before any step: look again after the first
            elif verdict.permanent:
                self.since[i] = step
                settled = True
        if settled:
            self._active = [entry for entry in self._active if self.since[entry[0]] is None]
        return changes

    def results(self, ended: bool = False) -> list[dict]:
        """Per rule: ``complete`` (the four-valued verdict after the last step),
        ``complete_step`` (the first step after which it was permanent, or None), whether it
        was anticipated, and the reason.  ``ended``: the session has ended, so its last step
        settles what was not permanent yet (``at_end``)."""
        out = []
        for i, rule in enumerate(self.monitor.ruleset.rules):
            verdict = self.verdicts[i]
            if verdict is None:
                self._states[i] = None
                self.observe()
                verdict = self.verdicts[i]
            found = {"rule": rule.name, "complete": verdict.value,
                     "complete_step": self.since[i], "anticipated": verdict.anticipated,
                     "reason": verdict.reason}
            out.append(at_end(found, self.monitor.steps - 1) if ended else found)
        return out

    def permanently_violated(self) -> set[str]:
        return {r.name for r, v in zip(self.monitor.ruleset.rules, self.verdicts)
                if v is not None and v.value == PERMANENTLY_VIOLATED}


# Why a verdict is final after the last step of a session that has ended.
ENDED_MET = "the session has ended, nothing owed"
ENDED_UNMET = "the session ended without meeting it"


def at_end(found: dict, last_step: int) -> dict:
    """A rule's four-valued verdict after the last step of a session that has ended: nothing
    can follow, so "met so far" is met for good (nothing owed) and "not met yet"
    is broken for good, certain since the last step.  Never "a later step can still ..."."""
    if found["complete"] in PERMANENT:
        return found
    met = found["complete"] == CURRENTLY_SATISFIED
    return {**found, "complete": PERMANENTLY_SATISFIED if met else PERMANENTLY_VIOLATED,
            "complete_step": max(last_step, 0), "reason": ENDED_MET if met else ENDED_UNMET}


def verdicts_now(monitor: SessionMonitor, ended: bool = False) -> list[dict]:
    """The four-valued verdict of every rule for the monitor's current state (no history:
    ``complete_step`` is not known here and left out); ``ended`` as for ``results``."""
    anticipation = SessionAnticipation(monitor, resume=False)
    anticipation.observe()
    return [{k: v for k, v in r.items() if k != "complete_step"}
            for r in anticipation.results(ended)]


def permanently_violated(monitor: SessionMonitor, event: Any = None) -> set[str]:
    """Names of the rules that no continuation of the monitor's session can satisfy (for the
    rule's formula over the whole session): the guard blocks a candidate step that leads here,
    even when progression has not reached ``false``.  ``event``: the last event fed (read for
    ``prev()``; by default the monitor's snapshot of it)."""
    anticipation = SessionAnticipation(monitor, resume=False)
    anticipation.observe(event)
    return anticipation.permanently_violated()


def words(value: str) -> str:
    return WORDS.get(value, value)


__all__ = ["Anticipator", "SessionAnticipation", "anticipator_for", "at_end",
           "permanently_violated", "verdicts_now", "words"]
