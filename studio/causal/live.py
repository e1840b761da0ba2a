"""CPL guards decided as a live multi-agent session's events arrive (paper 001, online).

``CausalMonitor`` wants its events in a causal order: a receive after its send.  Events posted
by several agents arrive in whatever order the network and the agents make, so a receive may
come before its send.  ``LiveGuards`` takes them in arrival order and keeps a lifeline whose
receive has no send yet waiting: that receive and every later event of the same lifeline are
held, and monitored as soon as the send arrives.  Each lifeline's own events keep their order,
so every event is monitored with exactly the causal past it has in the session's MSC, and a
guard's value at a choice event is the one ``run_monitor`` finds over the whole session - whatever
the arrival order (tests/causal/test_live.py checks this against random arrival orders).

    guards = LiveGuards({"merge_ok": {"cpl": MERGE_GUARD, "owner": "Committer"}},
                        lifelines=["Orchestrator", "TestRunner", "Committer"])
    for event in arriving:            # canonical event dicts (see studio.causal.msc)
        for answer in guards.add(event):
            answer.step, answer.guard, answer.value, answer.reason

``add`` answers for the event it is given when it is a choice (one ``GuardAnswer`` per guard
named), and for held choice events that the event released (their own ``step``).  A held choice
is answered ``value=None`` with the message it waits for.  The lifelines are fixed at
construction (the monitor is compiled for them): an event of another lifeline raises
``NewLifeline``, and the caller builds a new ``LiveGuards`` over the session so far.  An event
the monitor cannot take (a message sent or received twice, a receive on the wrong lifeline)
stops the evaluation for the rest of the session - later choices are answered with ``value=None``
and the reason - as the MSC of such a session cannot be drawn either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from .monitor import CausalMonitor, MonitorError, normalise_guards
from .msc import CHOICE_KEY, RECEIVE, SEND, read_guards, read_message

__all__ = ["GuardAnswer", "LiveGuards", "NewLifeline"]


class GuardAnswer(NamedTuple):
    """A guard at a choice event: ``value`` True or False over the event's causal past, or None
    when it cannot be decided (``reason`` says why).  ``seen``: how many events of each lifeline
    the causal past holds (lifelines with none left out).  ``guard`` is None when the choice
    names no guard in a usable way."""

    step: Any
    lifeline: str
    guard: str | None
    value: bool | None
    reason: str
    seen: tuple[tuple[str, int], ...] = ()


class NewLifeline(LookupError):
    """An event of a lifeline this ``LiveGuards`` was not built for."""

    def __init__(self, lifeline: str):
        super().__init__(f"lifeline {lifeline!r} is not monitored")
        self.lifeline = lifeline


class LiveGuards:
    """The guards of one session over its events in arrival order (see the module's doc).

    ``guards``: name -> CPL text or ``{"cpl", "owner"}`` (as ``CausalMonitor`` takes them);
    ``lifelines``: the session's lifelines (those the guards name are added); ``unknown``: what
    to say about a choice naming a guard that ``guards`` lacks."""

    def __init__(self, guards: Mapping, lifelines: Iterable[str] = (), *,
                 unknown: str = "no such guard is declared"):
        # A guard that does not parse or compile is answered with its reason; the others are
        # still decided.
        self.unusable: dict[str, str] = {}
        guard_list = []
        for name, spec in guards.items():
            try:
                guard_list.extend(normalise_guards({name: spec}))
            except ValueError as exc:  # CplSyntaxError is one
                self.unusable[name] = str(exc)
        names: dict[str, None] = dict.fromkeys(lifelines)
        for guard in guard_list:
            names.update(dict.fromkeys(sorted(guard.formula.lifelines())))
            names.update(dict.fromkeys(sorted(guard.owners or ())))
        self.lifelines = tuple(names)
        self.unknown = unknown
        try:
            self._monitor = CausalMonitor(self.lifelines, guard_list, sequential=False)
        except ValueError:
            usable = []
            for guard in guard_list:
                try:
                    CausalMonitor(self.lifelines, [guard], sequential=False)
                    usable.append(guard)
                except ValueError as exc:
                    self.unusable[guard.name] = str(exc)
            self._monitor = CausalMonitor(self.lifelines, usable, sequential=False)
        self._owners = {**{name: None for name in self.unusable},
                        **{g.name: g.owners for g in guard_list}}
        self._known = frozenset(self.lifelines)
        self._sent: set[str] = set()
        self._held: dict[str, list[Mapping]] = {}       # lifeline -> events waiting, in order
        self._waiting: dict[str, list[str]] = {}        # message id -> lifelines waiting for it
        self.broken: str | None = None                  # why nothing more is decided
        self.added = 0

    @property
    def held(self) -> int:
        """Events waiting for a send."""
        return sum(len(events) for events in self._held.values())

    def add(self, event: Mapping) -> list[GuardAnswer]:
        lifeline = event.get("lifeline")
        if lifeline not in self._known:
            raise NewLifeline(lifeline)
        self.added += 1
        answers: list[GuardAnswer] = []
        self._take(event, answers)
        return answers

    # -- arrival order to causal order --

    def _take(self, event: Mapping, answers: list[GuardAnswer]) -> None:
        lifeline = event["lifeline"]
        waiting = self._held.get(lifeline)
        if waiting is not None:
            waiting.append(event)
            self._answer_held(event, answers, waiting[0])
            return
        mid, _, kind = _message(event)
        if kind == RECEIVE and mid not in self._sent and self.broken is None:
            self._held[lifeline] = [event]
            self._waiting.setdefault(mid, []).append(lifeline)
            return
        self._monitor_event(event, answers)
        if kind == SEND and mid in self._waiting:
            for other in self._waiting.pop(mid):
                for released in self._held.pop(other, ()):
                    self._take(released, answers)

    def _monitor_event(self, event: Mapping, answers: list[GuardAnswer]) -> None:
        names, problem = _choice(event)
        if self.broken is None:
            try:
                self._monitor.process(event, decide=False)
            except MonitorError as exc:
                self.broken = f"step {event.get('step')}: {exc.message}"
            else:
                mid, _, kind = _message(event)
                if kind == SEND:
                    self._sent.add(mid)
        if names is None:
            return
        lifeline, step = event["lifeline"], event.get("step")
        if problem:
            answers.append(GuardAnswer(step, lifeline, None, None, problem))
            return
        for name in names:
            answers.append(self._decide(lifeline, step, name, event))

    def _refusal(self, lifeline: str, name: str, event: Mapping) -> str | None:
        """Why a choice cannot decide ``name`` whatever its causal past, or None."""
        if name not in self._owners:
            return f"{name!r}: {self.unknown}"
        if name in self.unusable:
            return f"{name} cannot be evaluated: {self.unusable[name]}"
        owners = self._owners[name]
        if owners is not None and lifeline not in owners:
            return (f"{name} is decided by lifeline {', '.join(sorted(owners))} only; this "
                    f"choice is on {lifeline}")
        if _message(event)[2] is not None:
            return "a choice event cannot also send or receive a message"
        return None

    def _decide(self, lifeline: str, step, name: str, event: Mapping) -> GuardAnswer:
        refused = self._refusal(lifeline, name, event)
        if refused is None and self.broken is not None:
            refused = (f"the session's messages do not form a chart ({self.broken}): no guard "
                       "is decided after that")
        if refused is not None:
            return GuardAnswer(step, lifeline, name, None, refused)
        value, _ = self._monitor.evaluate_now(lifeline, name)
        clock = self._monitor.clock(lifeline)
        seen = tuple((name_, n) for name_, n in zip(self.lifelines, clock) if n)
        past = ", ".join(f"{name_} {n}" for name_, n in seen)
        reason = (f"{name} {'holds' if value else 'is false'} over the causal past of this "
                  f"event ({sum(n for _, n in seen)} events: {past})")
        return GuardAnswer(step, lifeline, name, bool(value), reason, seen)

    def _answer_held(self, event: Mapping, answers: list[GuardAnswer], first: Mapping) -> None:
        names, problem = _choice(event)
        if names is None:
            return
        lifeline, step = event["lifeline"], event.get("step")
        if problem:
            answers.append(GuardAnswer(step, lifeline, None, None, problem))
            return
        mid, peer, _ = _message(first)
        reason = (f"not decided yet: lifeline {lifeline} received message {mid!r} (step "
                  f"{first.get('step')}) before its send arrived; decided when "
                  f"{peer or 'the sender'}'s send of it is posted")
        answers.extend(GuardAnswer(step, lifeline, name, None,
                                   self._refusal(lifeline, name, event) or reason)
                       for name in names)


def _message(event: Mapping) -> tuple[str | None, str | None, str | None]:
    try:
        return read_message(event)
    except ValueError:
        return None, None, None


def _choice(event: Mapping) -> tuple[list[str] | None, str | None]:
    """The guard names of a choice event (None: not a choice), or the problem with them."""
    data = event.get("data")
    if not isinstance(data, Mapping) or CHOICE_KEY not in data:
        return None, None
    try:
        return list(dict.fromkeys(read_guards(data))), None
    except ValueError as exc:
        return [], str(exc)
