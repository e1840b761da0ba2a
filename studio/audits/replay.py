"""Replaying one session under an audit run's rules and labelers, for the session page.

Results store each rule's verdict changes and final residual, not the residual after every step
(that would be a formula per step per rule).  The page asks for one step at a time, so it is
recomputed here: the session's events are fed, in step order and labelled exactly as the run's
batches label them, to a fresh ``SessionMonitor`` built from the run's rule versions and its
labeler snapshot.  Nothing here is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from studio.monitor import SessionMonitor
from studio.monitor.anticipation import SessionAnticipation
from studio.monitor.monitors import InstanceMonitor, label_names
from studio.traces.models import Event, TraceSession

from .models import AuditRun
from .services import monitor_event, prepared_rules

# Open obligations listed per rule (a rule like G(p -> F q) may keep thousands open).
OBLIGATIONS_SHOWN = 20

_FIELDS = ("session_id", "step", "lifeline", "input", "output", "data", "labels")


@dataclass(frozen=True)
class OpenObligation:
    residual: str
    triggers: list[int]      # stored steps that opened an obligation now owing ``residual``
    more: int = 0            # further triggers not listed


@dataclass(frozen=True)
class RuleAtStep:
    rule: str
    formula: str
    verdict: str             # TRAC's verdict after the step
    residual: str            # what the rest of the session still owes
    final: str               # the LTLf verdict if the session had ended at this step
    obligations: list[OpenObligation] = field(default_factory=list)  # G-rules only


@dataclass(frozen=True)
class StepState:
    step: int                # the stored step number
    position: int            # its 0-based position in the session
    rules: list[RuleAtStep]


class StepNotFound(LookupError):
    """The session has no event at the requested step."""


def _rows(session: TraceSession, through_step: int | None = None,
          from_step: int | None = None) -> Iterator[tuple]:
    events = Event.objects.filter(session=session)
    if through_step is not None:
        events = events.filter(step__lte=through_step)
    if from_step is not None:
        events = events.filter(step__gte=from_step)
    return events.order_by("step").values_list(*_FIELDS).iterator(chunk_size=2000)


def state_at(run: AuditRun, session: TraceSession, step: int) -> StepState:
    """Every rule of the run after the event at ``step`` (a stored step number)."""
    ruleset, labeling, _ = prepared_rules(run)
    versions = {v.rule.name: v.formula for v in run.rule_versions.select_related("rule")}
    monitor = SessionMonitor(ruleset, witnesses=False)
    previous = None
    position = -1
    # Positions map to stored steps exactly as in the audit (they differ when steps have gaps).
    positions: list[int] = []
    reached = False
    for row in _rows(session, through_step=step):
        event = monitor_event(row)
        monitor.feed(labeling.label(event, previous))
        previous = event
        positions.append(row[1])
        position += 1
        reached = row[1] == step
    if not reached:
        raise StepNotFound(step)
    rules = []
    for result, trac, other in zip(monitor.results(), monitor.trac, monitor.violation_monitors,
                                   strict=True):
        obligations = []
        if isinstance(other, InstanceMonitor):
            for state, members in list(other.groups.items())[:OBLIGATIONS_SHOWN]:
                triggers = [positions[m.trigger] for m in members[:OBLIGATIONS_SHOWN]]
                obligations.append(OpenObligation(state.residual.text, triggers,
                                                  max(0, len(members) - len(triggers))))
        rules.append(RuleAtStep(result.rule, versions.get(result.rule, ""), result.verdict,
                                result.residual.text, trac.final(), obligations))
    return StepState(step, position, rules)


# Sessions longer than this are not replayed for their complete verdicts on a page or in the
# API (``complete_verdicts`` answers None); ``manage.py audit --anticipate`` has them all.
COMPLETE_REPLAY_LIMIT = 20_000


def complete_verdicts(run: AuditRun, session: TraceSession) -> dict[str, dict] | None:
    """Per rule name, its anticipatory verdict over the whole session (paper 002, issue 17):
    ``complete`` (permanently_/currently_ satisfied/violated), ``complete_step`` (the stored
    step after which it was permanent, or None), ``complete_reason`` and ``anticipated``.
    The session is replayed under the run's rules and labelers; None past
    ``COMPLETE_REPLAY_LIMIT`` events."""
    if Event.objects.filter(session=session).count() > COMPLETE_REPLAY_LIMIT:
        return None

    ruleset, labeling, _ = prepared_rules(run)
    monitor = SessionMonitor(ruleset, witnesses=False)
    anticipation = SessionAnticipation(monitor)
    previous = None
    positions: list[int] = []
    for row in _rows(session):
        event = monitor_event(row)
        labelled = labeling.label(event, previous)
        monitor.feed(labelled)
        anticipation.observe(labelled)
        previous = event
        positions.append(row[1])
    if not positions:
        return None
    return {r["rule"]: {"complete": r["complete"],
                        "complete_step": (positions[r["complete_step"]]
                                          if r["complete_step"] is not None else None),
                        "complete_reason": r["reason"], "anticipated": r["anticipated"]}
            for r in anticipation.results(ended=not session.is_open)}


def labels_between(run: AuditRun, session: TraceSession, first: int,
                   last: int) -> dict[int, list[str]]:
    """The atoms true at each stored step from ``first`` to ``last``: those the run's labeling
    gives the event and the data atoms of the run's rules that hold on it.  Labels read at most
    the event before, so only that one is read from earlier in the session."""
    ruleset, labeling, _ = prepared_rules(run)
    before = (Event.objects.filter(session=session, step__lt=first).order_by("-step")
              .values_list(*_FIELDS).first())
    # A monitor is the one place that knows how data atoms read the previous event; its
    # verdicts are meaningless here (it starts mid-session) and are not used.
    monitor = SessionMonitor(ruleset, witnesses=False)
    previous = None
    if before is not None:
        previous = monitor_event(before)
        monitor.feed(labeling.label(previous, None))
    out = {}
    for row in _rows(session, through_step=last, from_step=first):
        event = monitor_event(row)
        labelled = labeling.label(event, previous)
        out[row[1]] = list(label_names(monitor.labels_for(labelled)))
        monitor.feed(labelled)
        previous = event
    return out
