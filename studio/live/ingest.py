"""Live monitoring: an agent's events in, verdict changes out, one session at a time.

``ingest`` stores a batch of events for one session and advances the session's monitors in one
transaction, holding the session's row lock, so deliveries to one session are monitored one after
the other, in the order they were stored (RELIABILITY 11).  An event id is unique per workspace
and source: a repeated delivery stores nothing and reports no verdict change again.  How the
monitors are kept between deliveries, and why that gives the answers of one monitor that saw
every event in order: ``snapshots``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from studio.errors import ServiceError
from studio.traces import vocabulary
from studio.traces.models import monitor_event
from studio.workspaces.models import Workspace

from studio.monitor.anticipation import verdicts_now

from . import attention, causal_guards, context as live_context, snapshots
from .context import MONITOR_LOCK, Context, context_for
from .errors import SessionEnded, labelers_answer
from .events import (
    MAX_EVENTS_PER_BATCH, SOURCE_LIVE, Clean, ItemError, checked_session_id, clean_event,
)
from .snapshots import (
    bring_up_to_date, gap_limit, keep_live, rule_states, snapshot_of, take_live, violation_counts,
)
from .storage import insert_statements, lock_and_read, session_update, write_delivery

_INSERT_ATTEMPTS = 3


def clear_caches() -> None:
    """Forget every process cache of live monitoring (as a fresh server process would start)."""
    live_context.clear()
    snapshots.clear()
    causal_guards.clear()


class _Retry(Exception):
    """An event id was taken by a concurrent delivery to another session: start over."""


def ingest(workspace: Workspace, session_external_id: str, events: Sequence[Any],
           source: str = SOURCE_LIVE, actor=None, *, delivery_id: str | None = None,
           context: Context | None = None) -> dict:
    """Store ``events`` for one session and advance its monitors; see the module's doc.

    ``delivery_id`` (the Standard Webhooks message id) gives events without an ``event_id`` the
    id ``<delivery_id>:<index>``, so a redelivered batch is recognised.  ``actor`` is who posted
    (an ``api.core.Actor``, or None for a signed webhook); it is not recorded per event.

    Returns ``{"session", "steps", "stored", "duplicates", "rejected", "rebuilt", "events",
    "rules"}``: per event (in the order given) its index, event id, status (``stored``,
    ``duplicate`` or ``error``), step and verdict changes (or the error and the field at
    fault); per rule its verdict, residual, final verdict (if the session ended now) and the
    number of violations found so far.
    """
    session_external_id = checked_session_id(session_external_id)
    if not isinstance(events, (list, tuple)):
        raise ServiceError("events must be an array", field="events", status=422)
    if len(events) > MAX_EVENTS_PER_BATCH:
        raise ServiceError(f"a batch holds at most {MAX_EVENTS_PER_BATCH} events",
                           field="events", status=413)
    invalid: dict[int, dict] = {}
    valid: list[tuple[int, Clean]] = []
    for index, raw in enumerate(events):
        default_id = f"{delivery_id}:{index}" if delivery_id else None
        try:
            valid.append((index, clean_event(raw, session_external_id, default_id)))
        except ItemError as exc:
            invalid[index] = {"index": index, "status": "error", "error": exc.message}
            if exc.field:
                invalid[index]["field"] = exc.field
    context = context or context_for(workspace)
    for attempt in range(_INSERT_ATTEMPTS):
        try:
            with labelers_answer():
                result = _ingest_once(workspace, session_external_id, valid, source, context)
            break
        except _Retry:
            if attempt == _INSERT_ATTEMPTS - 1:
                raise ServiceError("concurrent deliveries kept claiming the same event ids; "
                                   "retry", status=409) from None
    items = sorted([*result.pop("items"), *invalid.values()], key=lambda item: item["index"])
    result["events"] = items
    result["rejected"] = sum(1 for item in items if item["status"] == "error")
    return result


def _ingest_once(workspace: Workspace, external_id: str, valid: list[tuple[int, Clean]],
                 source: str, context: Context) -> dict:
    items: list[dict] = []
    ids = {c.event_id for _, c in valid if c.event_id is not None}
    cached = take_live(workspace.pk, external_id, context)
    with transaction.atomic():
        if not settings.LIVE_DURABLE_COMMIT and connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # see the setting: latency against durability
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        tail = (cached.pk, cached.next_step, gap_limit()) if cached is not None else None
        locked = lock_and_read(workspace, external_id, source, ids, tail)
        session_pk, steps_before, known = locked.pk, locked.steps, locked.known
        if locked.ended and any(c.event_id is None or c.event_id not in known
                                for _, c in valid):
            raise SessionEnded(external_id)
        restored = bring_up_to_date(session_pk, steps_before, context, live=cached,
                                    after_live=locked.after_live, state=locked.state)
        live = restored.live
        monitor = live.monitor
        # Uploaded logs may leave gaps in step numbers (0, 1, 5): continue after the last one,
        # not after the count, or a new event would collide with a stored step.
        first_step = max(live.next_step, steps_before)
        rows: list[tuple[int, Clean]] = []
        duplicates = 0
        previous = live.last
        with MONITOR_LOCK:
            for index, clean in valid:
                seen = known.get(clean.event_id) if clean.event_id is not None else None
                if seen is not None and seen[0] != session_pk:
                    items.append({"index": index, "event_id": clean.event_id, "status": "error",
                                  "error": f"event_id {clean.event_id!r} was already stored in "
                                           "another session", "field": "event_id"})
                    continue
                if seen is not None:
                    items.append({"index": index, "event_id": clean.event_id,
                                  "status": "duplicate", "step": seen[1], "changes": []})
                    duplicates += 1
                    continue
                step = first_step + len(rows)
                event = monitor_event(session_pk, step, clean.lifeline, clean.input,
                                      clean.output, clean.data, clean.labels)
                changes = monitor.feed(context.labeling.label(event, previous))
                previous = event
                rows.append((step, clean))
                if clean.event_id is not None:
                    known[clean.event_id] = (session_pk, step)  # repeated later in the batch
                items.append({"index": index, "event_id": clean.event_id, "status": "stored",
                              "step": step, "changes": changes})
            counts = violation_counts(monitor, live.counts)
            rules = rule_states(monitor, counts, open=not locked.ended)
            # The session's place on the live page, stored with what changed it (a rule whose
            # anticipation is not known yet counts as open: the delivery does not wait for it).
            order = None
            if rows or restored.rebuilt:
                order = attention.rank(
                    [{**rule, "complete": now["complete"]} for rule, now in
                     zip(rules, verdicts_now(monitor, ended=locked.ended, wait=False))],
                    open=not locked.ended, counting=context.counting)
            monitor.forget_history()
        # The causal guards of choice events (multi-agent sessions): see causal_guards.
        guards = (causal_guards.decide(workspace, external_id, session_pk, steps_before, rows)
                  if source == SOURCE_LIVE else causal_guards.NONE)
        live.counts = counts
        steps = steps_before + len(rows)
        if rows:
            live.steps += len(rows)
            live.next_step = first_step + len(rows)
            live.last = previous
        # A snapshot when the session starts or was rebuilt, then every SNAPSHOT_EVERY events.
        snapshot = None
        every = snapshots.SNAPSHOT_EVERY
        if restored.rebuilt or (rows and (
                steps_before == 0 or steps_before // every != steps // every
                or restored.behind_snapshot >= every)):
            snapshot = snapshot_of(live)
        if locked.ended:
            snapshot = None  # the end's snapshot (end violations counted) stays as it is
        inserts = []
        if rows:
            # In id order, so two deliveries sharing event ids never wait on each other in a
            # cycle; a clash with a concurrent delivery to another session means start over.
            rows.sort(key=lambda r: r[1].event_id or "")
            inserts = insert_statements(workspace, session_pk, source, rows)
        update = (session_update(session_pk, steps, bool(rows), snapshot, order)
                  if rows or snapshot is not None else None)
        try:
            write_delivery(inserts, update)
        except IntegrityError:
            raise _Retry() from None
        if rows:  # the tools, labels and fields these events show, counted (one statement)
            vocabulary.record(workspace, vocabulary.counts_of(
                workspace, [(c.input, c.output, c.data, c.labels) for _, c in rows]))
        # Only what was committed may be reused: a rolled-back delivery leaves nothing.
        transaction.on_commit(lambda: keep_live(workspace.pk, external_id, live))
    result = {"session": external_id, "steps": steps, "stored": len(rows),
              "duplicates": duplicates, "rebuilt": restored.rebuilt, "items": items,
              "rules": rules}
    guards.attach(items, result)
    return result
