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

No request waits on a first search (issue 27, item 4).  A state never decided before can take
seconds to search.  Callers on a request path ask with ``wait=False``: a state already decided
(in this process's memo, or in the shared ``store`` where another process or a worker put it)
answers at once; any other answers *not yet known* (``NOT_YET_KNOWN``: never one of the four
verdicts, so never a wrong one) and the search is handed to ``later`` (a background thread,
``studio.monitor.anticipation_ahead.BackgroundSearches``, or a task queue), which decides it
once however many requests ask.  ``studio.monitor.anticipation_ahead.warm`` searches the states
a rule set reaches ahead of any request.  Offline callers (audits, replays) keep ``wait=True``.
"""

from __future__ import annotations

import hashlib
import json
import time
import weakref
from collections.abc import Callable
from typing import Any

from studio.logic.anticipation import (
    CURRENTLY_SATISFIED,
    CURRENTLY_VIOLATED,
    PERMANENT,
    PERMANENTLY_SATISFIED,
    PERMANENTLY_VIOLATED,
    WORDS,
    RuleAnticipation,
    Verdict,
    for_monitor_rule,
)

from studio.logic.formula import FALSE, TRUE

from .session import RuleSet, SessionMonitor


MEMO_LIMIT = 50_000
STORE_ASK_SECONDS = 1.0
# Bumped when a change to the search could change a stored verdict (keys of ``store``).
KEY_VERSION = "anticipation-1"

# The answer for a state whose search has not been made yet (never one of the four verdicts).
NOT_YET_KNOWN = "not_yet_known"
NOT_YET_KNOWN_WORDS = "not yet known"
NOT_YET_KNOWN_REASON = ("whether later steps can still change this is being worked out in "
                        "the background; asked again shortly, it is known")

# Where states are handed to be decided off the request path, and where decided ones are kept
# for every process (``configure``); None: nowhere (``wait=False`` then only says not yet known).
_LATER: Callable | None = None
_STORE: Any = None


def configure(later: Callable | None = None, store: Any = None) -> None:
    """``later(anticipator, i, state, context)``: decide that state off the request path
    (coalesced by the callee); ``store``: verdicts shared by processes, with ``get(rule_key,
    state_key) -> dict | None``, ``put(rule_key, state_key, dict)`` and ``load(rule_keys) ->
    {(rule_key, state_key): dict}``."""
    global _LATER, _STORE
    _LATER, _STORE = later, store
    _anticipators.clear()


def configured() -> tuple[Callable | None, Any]:
    return _LATER, _STORE


def rule_key(rule) -> str:
    """A compiled rule's key in the store: its formula decides every verdict."""
    return hashlib.sha256(f"{KEY_VERSION}|{rule.formula.text}".encode()).hexdigest()


def context_json(context: tuple) -> list:
    return [[kind, str(value)] for kind, value in context]


def context_from_json(data: list) -> tuple:
    from fractions import Fraction

    return tuple((int(kind), Fraction(value)) for kind, value in data)


def state_key(residual_text: str, memory, context: tuple) -> str:
    """A state's key in the store (the residual as text, the past memory, the data context)."""
    text = json.dumps([residual_text, list(memory) if memory is not None else None,
                       context_json(context)], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def verdict_json(verdict: Verdict) -> dict:
    return {"value": verdict.value, "anticipated": verdict.anticipated,
            "reason": verdict.reason}


def verdict_from_json(data: dict) -> Verdict:
    return Verdict(data["value"], bool(data["anticipated"]), data["reason"])


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
        self.keys = [rule_key(r) for r in ruleset.rules]
        self.store = _STORE
        # Verdicts the store held when this anticipator was built: {(rule_key, state_key): dict}.
        self._stored: dict = {}
        if self.store is not None:
            try:
                self._stored = dict(self.store.load(sorted(set(self.keys))))
            except Exception:  # noqa: BLE001 - a store that does not answer: search again
                self._stored = {}
        self.later = _LATER
        self._asked: dict[tuple, float] = {}   # (rule, state key) -> when the store was asked
        self.handed_over = 0     # states handed to ``later``
        self.warmed = False      # ``anticipation_ahead.warm`` went through its states

    def _memory(self, state):
        carry = state.carry
        return carry.values if carry is not None and state.residual.has_past else None

    def decide(self, i: int, state, context, pause: Callable | None = None) -> Verdict:
        """The verdict of rule ``i`` in a TRAC state of its automaton, with a data context
        (searched here when not known: may take seconds; ``pause`` is called now and then
        during a search, to let other threads have the monitors' lock)."""
        verdict = self.known(i, state, context)
        if verdict is not None:
            return verdict
        carry = state.carry
        searches = self.rules[i].searches
        verdict = self.rules[i].verdict(state.residual,
                                        carry.values if carry is not None else None, context,
                                        pause=pause)
        self._remember(i, state, context, verdict)
        if self.store is not None and self.rules[i].searches != searches:
            try:
                self.store.put(self.keys[i], self._state_key(i, state, context),
                               verdict_json(verdict))
            except Exception:  # noqa: BLE001 - kept in this process all the same
                pass
        return verdict

    def _remember(self, i: int, state, context, verdict: Verdict) -> None:
        memo = self.memo[i]
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        memo[(state, context)] = verdict

    def _state_key(self, i: int, state, context) -> str:
        return state_key(state.residual.text, self._memory(state), context)

    def known(self, i: int, state, context, ask_store: bool = True) -> Verdict | None:
        """The verdict when it needs no search now: decided before (in this process or, with
        ``ask_store``, by another into the store), or one that needs no search at all (a
        residual true or false, a rule outside the data fragment); else None."""
        verdict = self.memo[i].get((state, context))
        if verdict is not None:
            return verdict
        ra = self.rules[i]
        residual = state.residual
        if ra.outside is not None or residual is TRUE or residual is FALSE:
            verdict = ra.verdict(residual, self._memory(state), context)  # no search
            self._remember(i, state, context, verdict)
            return verdict
        cached = ra.cached(residual, self._memory(state), context)
        if cached is not None:
            self._remember(i, state, context, cached)
            return cached
        if self.store is None:
            return None
        key = self._state_key(i, state, context)
        data = self._stored.get((self.keys[i], key))
        if data is None and ask_store:
            # Asked at most once a second per state (a state being searched elsewhere is
            # asked for by every request until it is there).
            now = time.monotonic()
            asked = self._asked.get((i, key))
            if asked is None or now - asked >= STORE_ASK_SECONDS:
                if len(self._asked) >= MEMO_LIMIT:
                    self._asked.clear()
                self._asked[(i, key)] = now
                try:
                    data = self.store.get(self.keys[i], key)
                except Exception:  # noqa: BLE001 - not known, then
                    data = None
        if data is None:
            return None
        verdict = verdict_from_json(data)
        ra.remember(residual, self._memory(state), context, verdict)
        self._remember(i, state, context, verdict)
        return verdict

    def not_yet(self, i: int, state, context) -> Verdict:
        """The answer for a state not decided yet: not yet known (never a guess), and the
        state handed to ``later`` to be decided off the request path."""
        if self.later is not None:
            self.handed_over += 1
            self.later(self, i, state, context)
        return PENDING

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
                 resume: bool = True, wait: bool = True):
        """``resume``: when the monitor has taken steps already, observe its state now (the
        steps before are not seen: ``complete_step`` is then at most the current step);
        ``wait``: search a state never decided before here (else it is not yet known, and
        decided off this thread, see the module documentation)."""
        self.monitor = monitor
        self.wait = wait
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
                if self.wait:
                    verdict = self.anticipator.decide(i, state, context)
                else:
                    verdict = (self.anticipator.known(i, state, context)
                               or self.anticipator.not_yet(i, state, context))
                    if verdict is PENDING:
                        states[i] = None   # look again at the next step
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
            if verdict is PENDING:
                found = {"rule": rule.name, "complete": None, "complete_step": None,
                         "anticipated": False, "reason": verdict.reason}
                # Once the session has ended, nothing can follow: its verdict is certain.
                if ended:
                    residual = self.monitor.trac[i].state.residual
                    found = at_end({**found, "complete": CURRENTLY_SATISFIED
                                    if residual.empty_value else CURRENTLY_VIOLATED},
                                   self.monitor.steps - 1)
                out.append(found)
                continue
            found = {"rule": rule.name, "complete": verdict.value,
                     "complete_step": self.since[i], "anticipated": verdict.anticipated,
                     "reason": verdict.reason}
            out.append(at_end(found, self.monitor.steps - 1) if ended else found)
        return out

    def permanently_violated(self) -> set[str]:
        return {r.name for r, v in zip(self.monitor.ruleset.rules, self.verdicts)
                if v is not None and v.value == PERMANENTLY_VIOLATED}

    def not_yet_known(self) -> set[str]:
        """The rules whose verdict is not known yet (``wait=False``: being searched)."""
        return {r.name for r, v in zip(self.monitor.ruleset.rules, self.verdicts)
                if v is PENDING}


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


def verdicts_now(monitor: SessionMonitor, ended: bool = False, wait: bool = True
                 ) -> list[dict]:
    """The four-valued verdict of every rule for the monitor's current state (no history:
    ``complete_step`` is not known here and left out); ``ended`` as for ``results``;
    ``wait=False``: a state not decided yet has ``complete`` None and says so in ``reason``
    (see the module documentation)."""
    anticipation = SessionAnticipation(monitor, resume=False, wait=wait)
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


def doomed_now(monitor: SessionMonitor, event: Any = None) -> tuple[set[str], set[str]]:
    """``permanently_violated`` without waiting for a search: the rules known to be broken for
    good, and the rules not known yet (their states handed to be searched off this thread)."""
    anticipation = SessionAnticipation(monitor, resume=False, wait=False)
    anticipation.observe(event)
    return anticipation.permanently_violated(), anticipation.not_yet_known()


def words(value: str | None) -> str:
    return NOT_YET_KNOWN_WORDS if value is None else WORDS.get(value, value)


PENDING = Verdict(NOT_YET_KNOWN, False, NOT_YET_KNOWN_REASON)


__all__ = ["NOT_YET_KNOWN", "NOT_YET_KNOWN_REASON", "NOT_YET_KNOWN_WORDS", "PENDING",
           "Anticipator", "SessionAnticipation", "anticipator_for", "at_end", "configure",
           "doomed_now", "permanently_violated", "verdicts_now", "words"]
