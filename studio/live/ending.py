"""Ending live sessions: by their agent (``end_session``) or, idle past their workspace's
``live_inactivity_minutes``, by beat's sweeper (``end_idle_sessions``).  Either way
``session_ended`` is sent, inside the transaction that ends it (a receiver that acts defers to
the commit): the guard counts ended sessions to learn its risk model again."""

from __future__ import annotations

from datetime import datetime

from django.db import models, transaction
from django.dispatch import Signal
from django.utils import timezone

from studio.errors import ServiceError
from studio.traces.models import TraceSession
from studio.workspaces.actions import LogAction
from studio.workspaces.models import Workspace
from studio.workspaces.services import record

from . import attention
from .context import MONITOR_LOCK, Context, context_for
from .errors import LabelerUnavailable, labelers_answer
from .events import SOURCE_LIVE, checked_session_id
from .reading import current_rules
from .snapshots import bring_up_to_date, rules_now, snapshot_of, take_live, violation_counts

# Sent once per session ended, with ``workspace_id``, ``session_id`` (the row's id),
# ``external_id`` and ``reason``.
session_ended = Signal()


def end_session(workspace: Workspace, session_external_id: str, actor=None, *,
                reason: str = "ended by its agent", context: Context | None = None) -> dict:
    """End a live session: it takes no more events (``SessionEnded``), and each rule gets its
    end verdict - what the end of the session reveals (``end_violations``: an obligation still
    owed, an eventuality never met) is counted with the violations found before.  Ending an
    ended session changes nothing and answers the same.

    Returns ``{"session", "steps", "ended_at", "already_ended", "rules"}``, ``rules`` as
    ``ingest`` answers them, with ``end_violations``: those the end revealed."""
    session_external_id = checked_session_id(session_external_id)
    context = context or context_for(workspace)
    # This process's monitor is not used (nor kept): the end is computed from the stored state.
    take_live(workspace.pk, session_external_id, context)
    with transaction.atomic():
        session = (TraceSession.objects.select_for_update()
                   .filter(workspace=workspace, external_id=session_external_id,
                           source=SOURCE_LIVE).first())
        if session is None:
            raise ServiceError(f"no live session {session_external_id!r} in this workspace",
                               field="session_id", status=404)
        if session.ended_at is not None:
            current = current_rules(session, context)
            return {"session": session.external_id, "steps": session.steps,
                    "ended_at": session.ended_at, "already_ended": True,
                    "rules": [{**r, "end_violations": None} for r in current["rules"]]}
        with labelers_answer():
            live = bring_up_to_date(session.pk, session.steps, context, live=None,
                                    after_live=None, state=session.monitor_state).live
        with MONITOR_LOCK:
            monitor = live.monitor
            found = violation_counts(monitor, live.counts)
            ended = {r.rule: sum(1 for v in r.violations if v.at_end)
                     for r in monitor.results()}
            counts = {name: found.get(name, 0) + ended.get(name, 0) for name in found}
            rules = [{**r, "end_violations": ended.get(r["rule"], 0)}
                     for r in rules_now(monitor, counts, open=False)]
            monitor.forget_history()
        live.counts = counts
        session.ended_at = timezone.now()
        session.monitor_state = snapshot_of(live)
        session.attention = attention.rank(rules, open=False, counting=context.counting)
        session.save(update_fields=["ended_at", "monitor_state", "attention"])
        rules = [{k: v for k, v in r.items() if k not in ("complete", "complete_reason")}
                 for r in rules]  # the answer's rules are those ``ingest`` gives

        record(workspace, actor, LogAction.LIVE_SESSION_ENDED, session,
               session=session.external_id, reason=reason, steps=session.steps,
               verdicts={r["rule"]: r["verdict"] for r in rules})
        session_ended.send(sender=TraceSession, workspace_id=workspace.pk, session_id=session.pk,
                           external_id=session.external_id, reason=reason)
    return {"session": session.external_id, "steps": session.steps,
            "ended_at": session.ended_at, "already_ended": False, "rules": rules}


def end_idle_sessions(now: datetime | None = None) -> int:
    """End every live session that had no event for its workspace's
    ``live_inactivity_minutes`` (0: never); returns how many were ended.  Beat runs it
    (worker.live.end_idle_live_sessions); a session that cannot be ended now (a labeler that
    does not answer) is tried again next time."""
    from datetime import timedelta

    now = now or timezone.now()
    ended = 0
    for workspace in Workspace.objects.filter(live_inactivity_minutes__gt=0):
        cutoff = now - timedelta(minutes=workspace.live_inactivity_minutes)
        idle = (TraceSession.objects.filter(workspace=workspace, source=SOURCE_LIVE,
                                            ended_at__isnull=True)
                .filter(models.Q(last_event_at__lt=cutoff)
                        | models.Q(last_event_at__isnull=True, created_at__lt=cutoff))
                .values_list("external_id", flat=True))
        for external_id in list(idle):
            try:
                answer = end_session(workspace, external_id,
                                     reason=f"no event for {workspace.live_inactivity_minutes} "
                                            "minutes")
            except LabelerUnavailable:
                continue
            ended += not answer["already_ended"]
    return ended
