"""What a reading of a rule would flag on stored sessions, and when it would never fire.

A reading is run with the audit's own monitors (``studio.monitor.fast.FastSessionMonitor``,
each rule with its default counting) over a bounded sample of stored sessions; a session is
flagged when the rule's verdict in it is *violated* (``RuleResult.session_verdict``), as the
audit would report it.  The sample is stated with every answer: the newest sessions, at most
``SAMPLE_SESSIONS`` of them and ``SAMPLE_EVENTS`` events in all (the caller reads them).

A reading's *trigger* is the event that puts its obligation into play: ``p`` in ``G (p -> ...)``,
the plain events of ``G !(p & q & !O r)`` (``p & q``: the exception ``!O r`` is not what fires
it).  A reading that flags nothing because its trigger never occurs in the sample "would never
fire"; the note says which part of the trigger the sample does show and which part it never
shows with it ("issue_refund occurs in 7 sessions, but never with amount over 500").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from studio.logic import formula as fm
from studio.logic.formula import Formula
from studio.logic.reads import trigger_of  # noqa: F401 - one definition, re-exported
from studio.monitor.fast import FastSessionMonitor
from studio.monitor.session import RuleSet

SAMPLE_SESSIONS = 200
SAMPLE_EVENTS = 20_000
EXAMPLES = 3

NEVER_FIRES, EVERY_SESSION, NEVER_FLAGS, NO_SESSIONS = (
    "never_fires", "every_session", "never_flags", "no_sessions")


@dataclass(frozen=True)
class FlagExample:
    session: str
    step: int           # where the first violation was found (-1: at the end of the session)

    def as_dict(self) -> dict:
        return {"session": self.session, "step": self.step}


@dataclass(frozen=True)
class Flags:
    """``flagged`` of the ``sampled`` sessions would be flagged; ``fired``: in how many the
    trigger occurred (None: the reading has no single trigger); ``kind`` and ``note`` say in
    words when the count needs reading with care."""

    flagged: int
    sampled: int
    examples: tuple[FlagExample, ...] = ()
    fired: int | None = None
    kind: str = ""
    note: str = ""

    @property
    def flagged_sessions(self) -> tuple[str, ...]:
        return tuple(e.session for e in self.examples)

    @property
    def examples_all(self) -> list[tuple[str, int]]:
        return [(e.session, e.step) for e in self.examples]

    def as_dict(self) -> dict:
        return {"flagged": self.flagged, "sampled": self.sampled,
                "examples": [e.as_dict() for e in self.examples], "fired": self.fired,
                "kind": self.kind, "note": self.note, "summary": self.summary}

    @property
    def summary(self) -> str:
        """One line for the pages: how many sessions, with the sample said."""
        if not self.sampled:
            return "No stored sessions to try it on yet."
        if self.sampled == 1:
            return ("Would flag the one stored session." if self.flagged
                    else "Would not flag the one stored session.")
        of = f"of the {self.sampled} newest stored sessions"
        if not self.flagged:
            return f"Would flag none {of}."
        return f"Would flag {self.flagged} {of}."


def trigger_parts(trigger: Formula) -> tuple[Formula, ...]:
    return trigger.args if trigger.op == "and" else (trigger,)


def reading_flags(readings: Sequence[Formula],
                  sessions: Iterable[tuple[str, Sequence[Mapping]]],
                  label: Callable[[Mapping, Mapping | None], Mapping] | None = None,
                  describe: Callable[[Formula], str] | None = None,
                  examples: int | None = EXAMPLES) -> list[Flags]:
    """Per reading, what it would flag on ``sessions`` (``(name, events)`` with the events as
    the monitors read them, in step order); ``label`` is the workspace's labeling (``Labeling.
    label``: event and previous event -> the event with its labels), ``describe`` says a trigger
    part in words for the notes (default: its formula text); ``examples`` how many flagged
    sessions each answer names (None: all)."""
    describe = describe or (lambda g: f"`{g.text}`")
    sessions = list(sessions)
    rules: list[tuple[str, Formula]] = [(f"reading {i}", f) for i, f in enumerate(readings)]
    triggers: dict[int, Formula] = {}
    watched: dict[Formula, str] = {}
    for i, f in enumerate(readings):
        trigger = trigger_of(f)
        if trigger is None:
            continue
        triggers[i] = trigger
        for part in (trigger, *trigger_parts(trigger)):
            if part not in watched:
                watched[part] = f"occurs {len(watched)}"
                # G !part is violated in exactly the sessions where part occurs at some step
                rules.append((watched[part], fm.G(fm.Not(part))))
    violated = _violated(rules, sessions, label)
    out = []
    for i, f in enumerate(readings):
        hits = violated[f"reading {i}"]
        shown = tuple(FlagExample(name, step) for name, step in hits[:examples])
        trigger = triggers.get(i)
        fired = None if trigger is None else len(violated[watched[trigger]])
        kind, note = _note(len(hits), len(sessions), trigger, fired, violated, watched, describe)
        out.append(Flags(len(hits), len(sessions), shown, fired, kind, note))
    return out


def _violated(rules, sessions, label) -> dict[str, list[tuple[str, int]]]:
    """Per rule name, the sessions where its verdict is violated, with the first detection."""
    found: dict[str, list[tuple[str, int]]] = {name: [] for name, _ in rules}
    if not sessions:
        return found
    ruleset = RuleSet(rules)
    for name, events in sessions:
        monitor = FastSessionMonitor(ruleset, witnesses=False)
        previous = None
        for event in events:
            monitor.ingest(label(event, previous) if label is not None else event)
            previous = event
        for result in monitor.results():
            if result.session_verdict() == "violated":
                first = min((v.detected for v in result.violations), default=-1)
                found[result.rule].append((name, first))
    return found


def _note(flagged: int, sampled: int, trigger: Formula | None, fired: int | None,
          violated: dict, watched: dict, describe) -> tuple[str, str]:
    if not sampled:
        return NO_SESSIONS, ("There are no stored sessions to try it on yet: upload a log to "
                             "see what it would flag.")
    if trigger is not None and not fired:
        return NEVER_FIRES, _never_fires(trigger, sampled, violated, watched, describe)
    if flagged == sampled and sampled > 1:
        return EVERY_SESSION, (f"Would flag every one of the {sampled} sessions tried: check "
                               "that this is what you mean (a rule every session breaks is "
                               "often read the wrong way round).")
    if not flagged and trigger is not None:
        return NEVER_FLAGS, (f"It applies when {describe(trigger)}: that happens in {fired} of "
                             f"the {sampled} sessions tried, and each time the rule was kept.")
    return "", ""


def _never_fires(trigger, sampled, violated, watched, describe) -> str:
    text = (f"Would never fire on your logs: it applies when {describe(trigger)}, and that "
            f"happens in none of the {sampled} sessions tried.")
    parts = trigger_parts(trigger)
    if len(parts) > 1:
        counts = "; ".join(f"{describe(p)}: {_sessions(len(violated[watched[p]]))}"
                           for p in parts)
        text += f" Taken apart: {counts}."
    return text


def _sessions(n: int) -> str:
    return "in no session" if not n else f"in {n} session{'s' if n != 1 else ''}"
