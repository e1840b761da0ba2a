"""Reading a live session without storing anything: what its rules say now (``current_rules``,
for the pages and for ending an ended session again), the session as it stands for questions
about its next step (``session_now``, read by ``check`` and by the guard), the session as it
would stand after events the agent took that may not be stored yet (``session_after``, for the
guard's ``taken``), and ``check``: whether candidate next events would violate a rule, and what
would remain to be done.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from studio.errors import ServiceError
from studio.labeling.llm import LLMError
from studio.monitor import VIOLATED, FastSessionMonitor
from studio.rules.models import RuleVersion
from studio.traces.models import TraceSession, monitor_event
from studio.workspaces.models import Workspace

from . import storage
from .context import MONITOR_LOCK, Context, LiveVersion, cached_ruleset, context_for
from .errors import SessionEnded, labelers_answer
from .events import MAX_EVENTS_PER_BATCH, Clean, ItemError, checked_session_id, clean_event
from .snapshots import (
    bring_up_to_date, feed_stored, from_snapshot, gap_limit, keep_live,
    rule_states, rules_now, snapshot_fits, take_live, violation_counts,
)

def current_rules(session: TraceSession, context: Context) -> dict:
    """What the session's monitors say about each rule now, for the rule versions its snapshot
    was built for (what the agent was last answered): ``{"rules": [{rule, verdict, residual,
    final, violations}], "note": why it may differ from the live rules, or ""}``.  ``context``:
    the workspace's live context (its rule versions, for the note, and its labeling)."""
    state = session.monitor_state
    if not isinstance(state, dict) or not isinstance(state.get("monitor"), dict):
        return {"rules": [], "note": "no event has been monitored yet"}
    key = state.get("versions") or []
    unreadable = {"rules": [], "note": "the saved monitor state cannot be read; the next event "
                                       "rebuilds it from the stored events"}
    try:
        ids = [int(version_id) for _, version_id in key]
        stored = {pk: (formula, counting) for pk, formula, counting in RuleVersion.objects
                  .filter(id__in=ids).values_list("id", "formula", "counting")}
        versions = [LiveVersion(int(version_id), rule, *stored[int(version_id)])
                    for rule, version_id in key]
        saved_for = Context(versions, cached_ruleset(versions), context.labeling)
    except (KeyError, TypeError, ValueError):
        return unreadable
    if not snapshot_fits(state, saved_for):
        return unreadable
    tail = storage.read_events(session.pk, state["next_step"])
    if session.steps - len(tail) != state["steps"]:
        return {"rules": [], "note": "the stored events do not match the saved monitor state; "
                                     "the next event re-monitors the session"}
    live = from_snapshot(session.pk, state, saved_for)
    if live is None:
        return unreadable
    try:
        if tail and context.labeling.labelers and state["steps"]:
            live.last = storage.event_before(session.pk, state["next_step"])
        feed_stored(live, tail, saved_for)
    except LLMError:
        return {"rules": [], "note": "a labeler could not label the latest events; retry later"}
    with MONITOR_LOCK:
        rules = rules_now(live.monitor, violation_counts(live.monitor, live.counts),
                          open=session.is_open, wait=False)
    note = ""
    if key != context.versions_key:
        note = ("monitored against earlier rule versions; the next event re-monitors the "
                "session against the current live rules")
    return {"rules": rules, "note": note}


# ---------------------------------------------------------------------------------------------
# Checking candidates

@dataclass
class SessionNow:
    """A live session as it stands, for questions about its next step (nothing locked, nothing
    stored): its row (``pk`` None when no event was posted yet), its monitors - a copy of this
    process's live ones (``_bases``; fresh ones before the first step) - the last event (``previous``, for labelers that compare with it)
    and the violations counted per rule besides those its monitors still list.  ``next_step``:
    every stored event with a step below it is in the monitors, none from it on (what the read
    saw).  ``known``: of the event ids ``session_now`` was asked about, those stored (event id
    -> (session id, step)), looked up right after the read."""

    external_id: str
    pk: int | None
    steps: int
    previous: dict | None
    counts: dict[str, int]
    next_step: int = 0
    known: dict[str, tuple[int, int]] = field(default_factory=dict)
    also: list = field(default_factory=list)   # the values of ``session_now``'s ``also``
    # The monitors per rule set, never advanced (``monitor`` forks them).
    _bases: dict = field(default_factory=dict, repr=False, compare=False)

    def monitor(self, context: Context) -> FastSessionMonitor:
        """A fresh copy of the session's monitors (the caller may advance it): forked
        (``SessionMonitor.fork``: copy on write, nothing parsed again)."""
        with MONITOR_LOCK:
            return self.monitors(context).fork()

    def monitors(self, context: Context) -> FastSessionMonitor:
        """The session's monitors as they stand, to read only (never advance them)."""
        with MONITOR_LOCK:
            base = self._bases.get(id(context.ruleset))
            if base is None:
                base = FastSessionMonitor(context.ruleset, witnesses=False)
                self._bases[id(context.ruleset)] = base
            return base

    def residuals(self, context: Context) -> dict[str, str]:
        """Each rule's residual now (what it still requires), as text."""
        if self.pk is None and not self.steps and not self._bases:
            return {rule.name: rule.formula for rule in context.ruleset.rules}
        with MONITOR_LOCK:
            # Read from a copy: reading a rule's state makes the fast monitor write it out.
            saved = self.monitor(context).to_json()
        return {rule["rule"]: rule["trac"]["residual"] for rule in saved["rules"]}

    def monitor_event(self, clean: Clean, steps_ahead: int = 0) -> dict:
        return monitor_event(self.pk, self.steps + steps_ahead, clean.lifeline, clean.input,
                             clean.output, clean.data, clean.labels)


def session_now(workspace: Workspace, session_external_id: str, context: Context,
                ids: Sequence[str] = (), also: Sequence[tuple[str, Sequence]] = ()
                ) -> SessionNow:
    """The session's monitors brought up to date with its stored events (this process's copy
    when it fits, else the snapshot, else a replay), which of the event ids ``ids`` are stored
    (``known``) and the values of the caller's scalar SQL expressions ``also`` (each with its
    parameters), all in the same round trip.  ``SessionEnded`` for an ended session; ``LabelerUnavailable``
    when a labeler cannot label the events it has to catch up on."""
    session_external_id = checked_session_id(session_external_id)
    cached = take_live(workspace.pk, session_external_id, context)
    tail = (cached.pk, cached.next_step, gap_limit()) if cached is not None else None
    row, after_live, known, extra = storage.read_session(
        workspace.pk, session_external_id, tail, set(ids), also=also)
    if row is None:
        return SessionNow(session_external_id, None, 0, None, {}, 0, known, extra)
    session_pk, steps = row[0], row[1]
    if row[2] is not None:
        raise SessionEnded(session_external_id)
    with labelers_answer():
        live = bring_up_to_date(
            session_pk, steps, context, live=cached, after_live=after_live,
            state=storage.state_value(row[3]) if cached is None else NotImplemented).live
    previous = live.last if context.labeling.labelers else None
    with MONITOR_LOCK:
        counts = violation_counts(live.monitor, live.counts)
        # A copy on write of the live monitors, not their saved form read back (that costs a
        # request as much CPU as the decision): the live ones go back to the cache and move
        # on; the copy stays as it was read.
        base = live.monitor.fork()
    keep_live(workspace.pk, session_external_id, live)  # it fits what was read
    now = SessionNow(session_external_id, session_pk, steps, previous, counts,
                     live.next_step, known, extra)
    now._bases[id(context.ruleset)] = base
    return now


def seen_by(now: SessionNow, known: dict[str, tuple[int, int]]) -> set[str]:
    """Of the event ids ``known`` (event id -> (session id, step), as stored), those the read
    behind ``now`` included: stored in this session at a step below ``now.next_step``.  One
    stored later (after the read) is not in the monitors, whenever its id was looked up."""
    return {event_id for event_id, (session_pk, step) in known.items()
            if now.pk is not None and session_pk == now.pk and step < now.next_step}


def session_after(now: SessionNow, context: Context, cleans: Sequence[Clean]) -> SessionNow:
    """The session as it would stand had ``cleans`` (events the agent took, in order, that the
    read behind ``now`` did not include) been stored after it: they are labelled and fed to a
    fork of ``now``'s monitors - never to this process's live copy - and the answer is a
    SessionNow with its steps advanced, its last event, the violations they add counted and
    its monitors the fed fork.  Stores nothing; ``now`` is left as it was."""
    if not cleans:
        return now
    monitor = now.monitor(context)
    previous = now.previous
    for k, clean in enumerate(cleans):
        event = now.monitor_event(clean, k)
        labelled = label_event(context, event, previous)   # outside the lock: may ask a model
        with MONITOR_LOCK:
            monitor.ingest(labelled)
        previous = event
    # The violations they add stay listed in the fed monitors (and in their forks), so the
    # counts beside them stay ``now``'s (``violation_counts`` adds the listed ones).
    after = SessionNow(now.external_id, now.pk, now.steps + len(cleans), previous,
                       now.counts, now.next_step + len(cleans), now.known, now.also)
    after._bases[id(context.ruleset)] = monitor
    return after


def label_event(context: Context, event: dict, previous: dict | None) -> dict:
    """The monitor event with the workspace's labels (``LabelerUnavailable`` if a labeler that
    asks a model cannot answer)."""
    with labelers_answer():
        return context.labeling.label(event, previous)


def rules_if(context: Context, now: SessionNow, monitor: FastSessionMonitor,
             changes: list[dict]) -> list[dict]:
    """Per rule, what a candidate step (already fed to ``monitor``, which reported
    ``changes``) would do: whether it violates, the verdict and residual it leaves."""
    with MONITOR_LOCK:
        after = rule_states(monitor, violation_counts(monitor, now.counts))
    rules = []
    for rule in after:
        mine = [c for c in changes if c["rule"] == rule["rule"]]
        violates = any(c.get("verdict") == VIOLATED or "violation" in c for c in mine)
        rules.append({"rule": rule["rule"], "violates": violates,
                      "verdict": rule["verdict"], "trac_verdict": rule["trac_verdict"],
                      "residual": rule["residual"],
                      "violations": [c["violation"] for c in mine if "violation" in c]})
    return rules


def check(workspace: Workspace, session_external_id: str, candidates: Sequence[Any],
          context: Context | None = None) -> dict:
    """For each candidate next event (each on its own, from the session as it stands): per rule,
    whether it would violate - TRAC's verdict becoming violated, or a new violation instance -
    the verdict and the residual it would leave.  Stores nothing, locks nothing."""
    session_external_id = checked_session_id(session_external_id)
    if not isinstance(candidates, (list, tuple)):
        raise ServiceError("candidates must be an array", field="candidates", status=422)
    if len(candidates) > MAX_EVENTS_PER_BATCH:
        raise ServiceError(f"at most {MAX_EVENTS_PER_BATCH} candidates", field="candidates",
                           status=413)
    context = context or context_for(workspace)
    now = session_now(workspace, session_external_id, context)
    out = []
    for index, raw in enumerate(candidates):
        try:
            clean = clean_event(raw, session_external_id)
        except ItemError as exc:
            out.append({"index": index, "error": exc.message, "field": exc.field})
            continue
        monitor = now.monitor(context)
        event = label_event(context, now.monitor_event(clean), now.previous)
        with MONITOR_LOCK:
            changes = monitor.feed(event)
        rules = rules_if(context, now, monitor, changes)
        out.append({"index": index, "violates": any(r["violates"] for r in rules),
                    "rules": rules})
    return {"session": session_external_id, "steps": now.steps, "candidates": out}
