"""One trace, one session: the spans of ``/v1/traces`` stored in the session their trace names.

A span belongs to the session that any span of its trace names (``session.id``,
``gen_ai.conversation.id``), whichever arrived first; a trace none of whose spans has named one
yet is stored under a session named by its trace id.  The workspace keeps the choice per trace
(``TraceSessionLink``), so the later batches of a trace find it.  When a span names a session
for a trace whose earlier spans were stored under its trace id, those spans are moved into the
named session - after the events it already has, in the order they were stored - before the
batch's own events; the named session's monitors take them as events stored after them (the
catch-up of ``snapshots.bring_up_to_date``), and the trace-id session goes (its audit results
with it: they read events it no longer has).  A span naming another session than its trace's is
stored with its trace, and the conflict is recorded on the trace's row and answered.

Each trace of a request is stored in a transaction of its own, holding the trace's row lock
from the choice until its events are stored: two batches of one trace decide one after the
other, so a batch that stores under the trace id never runs beside one that moves the trace's
spans away from it.  Locks are taken in one order - the trace's row, then sessions in the order
of their ids - so two requests never wait on each other in a cycle.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.utils import timezone

from studio.errors import ServiceError
from studio.traces.formats.otlp import TraceConflict, TraceSessions, decode_traces
from studio.traces.models import Event, TraceSession, TraceSessionLink
from studio.workspaces.models import Workspace

from . import snapshots
from .context import context_for
from .errors import SessionEnded
from .events import SOURCE_OTLP
from .ingest import ingest
from .storage import lock_and_read, quoted_table


@dataclass
class Stored:
    """What a request's spans came to: the spans rejected (OTLP's ``rejectedSpans``) and why,
    the conflicts found (one sentence each), and the session each trace went to."""

    rejected: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sessions: dict[str, str] = field(default_factory=dict)
    moved: int = 0  # events moved from trace-id sessions into the sessions named


def store_spans(workspace: Workspace, document: dict, actor=None) -> Stored:
    """Decode an ``ExportTraceServiceRequest`` document and store its events, trace by trace."""
    sessions = TraceSessions(lookup=lambda trace_ids: named_sessions(workspace, trace_ids))
    decoded = decode_traces(document, sessions=sessions)
    out = Stored(decoded.rejected_spans, list(decoded.errors))
    by_trace: dict[str, list[dict]] = {}
    for event in decoded.events:  # a message goes with the trace of the span it starts
        by_trace.setdefault(event["data"]["trace_id"], []).append(event)
    context = context_for(workspace) if by_trace else None
    for trace_id in sorted(by_trace):
        events = by_trace[trace_id]
        try:
            with transaction.atomic():
                placed = place_trace(workspace, trace_id, sessions.names.get(trace_id, []))
                for event in events:
                    event["session"] = placed.session
                result = ingest(workspace, placed.session, events, SOURCE_OTLP, actor,
                                context=context)
        except ServiceError as exc:
            out.rejected += len(events)
            out.errors.append(f"trace {trace_id}: {exc.message}")
            continue
        out.sessions[trace_id] = placed.session
        out.moved += placed.moved
        out.warnings += [c.sentence() for c in placed.conflicts]
        for item in result["events"]:
            if item["status"] == "error":
                out.rejected += 1
                span = events[item["index"]].get("event_id")
                out.errors.append(f"span {span}: {item['error']}")
    return out


def named_sessions(workspace: Workspace, trace_ids: set[str]) -> dict[str, str]:
    """The sessions already named for these traces (read without a lock: ``place_trace``
    decides again under it)."""
    return dict(TraceSessionLink.objects.filter(workspace=workspace, trace_id__in=trace_ids,
                                                named=True).values_list("trace_id", "session"))


@dataclass
class Placed:
    session: str
    moved: int
    conflicts: list[TraceConflict]


def place_trace(workspace: Workspace, trace_id: str, names: list[str]) -> Placed:
    """The session of ``trace_id``'s spans, whose batch names ``names`` (in the order its spans
    came); in the caller's transaction, which then holds the trace's row lock.  A first name
    moves the spans stored under the trace id into the named session."""
    link = _locked_link(workspace, trace_id)
    moved = 0
    if not link.named and names:
        moved = move_trace(workspace, trace_id, link.session, names[0])
        link.session, link.named = names[0], True
        link.save(update_fields=["session", "named", "updated_at"])
    conflicts = [TraceConflict(trace_id, link.session, n) for n in names if n != link.session]
    new = [c.other for c in conflicts if c.other not in link.conflicts]
    if new and len(link.conflicts) < TraceSessionLink.CONFLICTS_KEPT:
        link.conflicts = [*link.conflicts, *new][:TraceSessionLink.CONFLICTS_KEPT]
        link.save(update_fields=["conflicts", "updated_at"])
    return Placed(link.session, moved, conflicts)


def _locked_link(workspace: Workspace, trace_id: str) -> TraceSessionLink:
    """The trace's row, locked until the transaction ends (created, unnamed, when new:
    concurrent creators meet on the unique (workspace, trace_id), and all lock the one row)."""
    rows = TraceSessionLink.objects.select_for_update().filter(workspace=workspace,
                                                               trace_id=trace_id)
    link = rows.first()
    if link is None:
        TraceSessionLink.objects.bulk_create(
            [TraceSessionLink(workspace=workspace, trace_id=trace_id, session=trace_id)],
            ignore_conflicts=True)
        link = rows.get()
    return link


def move_trace(workspace: Workspace, trace_id: str, source_id: str, target_id: str) -> int:
    """Move the events of ``trace_id`` stored in the session ``source_id`` (its trace-id
    session) to the end of the session ``target_id``, keeping their order; returns how many.

    The source session goes when it is left with no event; one that also holds events of
    something else (a span of another trace that named it) keeps them in a new row, so no
    server process takes its monitor for the old one's.  Either way its saved monitors and
    audit results go: they were computed over events it no longer has."""
    source = None
    target = None
    for name in sorted({source_id, target_id}):  # locks in one order
        if name == source_id:
            source = (TraceSession.objects.select_for_update()
                      .filter(workspace=workspace, external_id=source_id).first())
            if source is None:
                return 0
        else:
            target = lock_and_read(workspace, target_id, SOURCE_OTLP, set(), None)
    ours = Event.objects.filter(session=source, data__trace_id=trace_id)
    count = ours.count()
    if not count:
        return 0
    if target.ended:
        raise SessionEnded(target_id)
    last = Event.objects.filter(session_id=target.pk).order_by("-step").values_list(
        "step", flat=True).first()
    base = max(target.steps, last + 1 if last is not None else 0)
    table = quoted_table(Event)
    select, params = ours.order_by().values("pk").query.sql_with_params()
    with connection.cursor() as cursor:
        # Numbered after the target's last step, in their order: no (session, step) clash.
        cursor.execute(
            f"UPDATE {table} SET session_id = %s, step = %s + m.n FROM (SELECT id, "
            f"row_number() OVER (ORDER BY step) - 1 AS n FROM {table} WHERE id IN ({select})"
            f") m WHERE {table}.id = m.id", [target.pk, base, *params])
    TraceSession.objects.filter(pk=target.pk).update(steps=target.steps + count,
                                                     last_event_at=timezone.now())
    left = Event.objects.filter(session=source)
    if left.exists():
        keeper = TraceSession.objects.create(
            workspace=workspace, external_id=f"{source_id}~{uuid.uuid4().hex}",
            source=source.source, steps=max(0, source.steps - count),
            last_event_at=source.last_event_at, ended_at=source.ended_at)
        left.update(session=keeper)
        source.delete()
        TraceSession.objects.filter(pk=keeper.pk).update(external_id=source_id)
    else:
        source.delete()
    transaction.on_commit(lambda: snapshots.forget_live(workspace.pk, source_id))
    return count

