"""The statements live monitoring runs on every delivery, written out and sent together.

The ORM spends about a millisecond of CPU building each query, as much as the monitors spend on
an event, and each round trip to the database costs the request a wait (the webhook's latency
budget is 20 ms at p99).  A delivery makes three round trips: lock and read; insert and update;
commit.  Everything else goes through the ORM.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from django.db import connection
from django.utils import timezone

from studio.traces.models import Event, TraceSession, monitor_event
from studio.workspaces.models import Workspace

from .events import SOURCE_LIVE, Clean

def quoted_table(model) -> str:
    """The model's table name, quoted for the database."""
    return connection.ops.quote_name(model._meta.db_table)


# The events a monitor reads, straight from the table (the ORM would build a model per row).
EVENT_COLUMNS = ("step", "lifeline", "input", "output", "data", "labels")
_JSON_COLUMNS = ("input", "output", "data", "labels")


def events_sql(*, before: bool = False, limit: bool = False) -> str:
    """Events of a session from a step on, in step order (``before``: the last one before it);
    parameters: session id, step[, limit]."""
    columns = ", ".join(EVENT_COLUMNS)
    where = "step < %s ORDER BY step DESC LIMIT 1" if before else "step >= %s ORDER BY step"
    return (f"SELECT {columns} FROM {quoted_table(Event)} WHERE session_id = %s AND {where}"
            + (" LIMIT %s" if limit else ""))


def monitor_events(session_pk: int, rows: Sequence[tuple]) -> list[dict]:
    """Rows of ``events_sql`` as the monitors and labelers read events (``as_monitor_event``)."""
    loads = [Event._meta.get_field(name).from_db_value for name in _JSON_COLUMNS]
    out = []
    for step, lifeline, *values in rows:
        input, output, data, labels = (load(value, None, connection)
                                       for load, value in zip(loads, values))
        out.append(monitor_event(session_pk, step, lifeline, input, output, data, labels))
    return out


def read_events(session_pk: int, from_step: int) -> list[dict]:
    return monitor_events(session_pk, run(events_sql(), [session_pk, from_step]))


def event_before(session_pk: int, step: int) -> dict | None:
    found = monitor_events(session_pk, run(events_sql(before=True), [session_pk, step]))
    return found[0] if found else None


def read_state(session_pk: int) -> Any:
    rows = run(f"SELECT monitor_state FROM {quoted_table(TraceSession)} WHERE id = %s",
               [session_pk])
    return state_value(rows[0][0]) if rows else None


def read_session(workspace_pk: int, external_id: str, tail: tuple[int, int, int] | None,
                 ids: set[str] = frozenset(), source: str = SOURCE_LIVE,
                 also: Sequence[tuple[str, Sequence]] = ()
                 ) -> tuple[tuple | None, list[dict] | None, dict[str, tuple[int, int]], list]:
    """The session's row - id, steps, ended_at, and monitor_state when there is no ``tail`` -
    not locked, the events stored after this process's monitor (``tail`` as for
    ``lock_and_read``), which of the event ``ids`` are stored (event id -> (session id, step)),
    and the values of the caller's scalar SQL expressions ``also`` (each with its parameters),
    in one round trip (on Postgres one statement).  The row is None for a session not stored
    yet."""
    if connection.vendor == "postgresql":
        return _read_session_at_once(workspace_pk, external_id, tail, ids, source, also)
    state_column = ", monitor_state" if tail is None else ""
    statements: list[tuple[str, Sequence]] = [(
        f"SELECT id, steps, ended_at{state_column} FROM {quoted_table(TraceSession)} "
        "WHERE workspace_id = %s AND external_id = %s", [workspace_pk, external_id])]
    if tail is not None:
        statements.append((events_sql(limit=True), list(tail)))
    if ids:
        statements.append((_known_sql(len(ids)), [workspace_pk, source, *ids]))
    statements.extend((f"SELECT ({expression})", params) for expression, params in also)
    results = run_together(statements)
    extra = [rows[0][0] for rows in results[len(results) - len(also):]]
    known = ({e: (s, step) for e, s, step in results[len(statements) - len(also) - 1]}
             if ids else {})
    row = results[0][0] if results[0] else None
    if row is None or tail is None:
        return row, None, known, extra
    return row, monitor_events(tail[0], results[1]), known, extra


def _read_session_at_once(workspace_pk: int, external_id: str,
                          tail: tuple[int, int, int] | None, ids: set[str], source: str,
                          also: Sequence[tuple[str, Sequence]]):
    """``read_session`` in one statement (Postgres): a statement's own cost (parse, plan, one
    more result to fetch) is most of a read this small."""
    columns = ["s.id", "s.steps", "s.ended_at"]
    params: list = []
    if tail is None:
        columns.append("s.monitor_state")
    else:
        columns.append(_tail_column())
        params += list(tail)
    if ids:
        columns.append(_known_column(len(ids)))
        params += [workspace_pk, source, *ids]
    for expression, values in also:
        columns.append(f"({expression})")
        params += list(values)
    row = run(f"SELECT {', '.join(columns)} FROM (SELECT 1) one "
              f"LEFT JOIN {quoted_table(TraceSession)} s "
              "ON s.workspace_id = %s AND s.external_id = %s",
              [*params, workspace_pk, external_id])[0]
    extra = list(row[len(row) - len(also):])
    known = {e: (s, step) for e, s, step in _json_value(row[4]) or ()} if ids else {}
    if row[0] is None:
        return None, None, known, extra
    if tail is None:
        return tuple(row[:4]), None, known, extra
    after = [monitor_event(tail[0], step, lifeline, input, output, data, labels)
             for step, lifeline, input, output, data, labels in _json_value(row[3]) or ()]
    return tuple(row[:3]), after, known, extra


def state_value(raw: Any) -> Any:
    return TraceSession._meta.get_field("monitor_state").from_db_value(raw, None, connection)


def run_together(statements: list[tuple[str, Sequence]]) -> list[list[tuple] | None]:
    """Run the statements in order - each on its own, seeing what the ones before did and what
    others committed meanwhile - and return the rows of each (None for a statement that returns
    none).  On Postgres they go in one round trip (psycopg's pipeline mode), on psycopg cursors
    of their own: a Django cursor costs more CPU than the statement does.  Errors are Django's
    (IntegrityError, OperationalError, ...), as from a Django cursor."""
    if connection.vendor == "postgresql" and not connection.execute_wrappers:
        connection.ensure_connection()
        raw = connection.connection
        cursors = _raw_cursors(raw, len(statements))
        started = time.monotonic()
        with connection.wrap_database_errors:
            if len(statements) == 1:
                cursors[0].execute(*statements[0])
            else:
                with raw.pipeline():
                    for cursor, (sql, params) in zip(cursors, statements):
                        cursor.execute(sql, params)
            out = [cursor.fetchall() if cursor.description else None for cursor in cursors]
        if connection.queries_logged:  # DEBUG, or a test capturing queries
            took = f"{(time.monotonic() - started) / len(statements):.3f}"
            connection.queries_log.extend({"sql": f"{sql} -- {list(params)!r}", "time": took}
                                          for sql, params in statements)
        return out
    out = []
    with connection.cursor() as cursor:
        for sql, params in statements:
            cursor.execute(sql, params)
            out.append(cursor.fetchall() if cursor.description else None)
    return out


def _raw_cursors(raw, count: int) -> list:
    """``count`` psycopg cursors on the connection, kept with it for the next request (a cursor
    copies the connection's adapters when made).  Server-side parameters: no quoting in Python;
    prepared statements as the connection's ``prepare_threshold`` says (OPTIONS)."""
    kept = getattr(raw, "_studio_live_cursors", None)
    if kept is None:
        kept = []
        raw._studio_live_cursors = kept
    while len(kept) < count:
        kept.append(psycopg.Cursor(raw))
    return kept[:count]


def run(sql: str, params: Sequence) -> list[tuple] | None:
    return run_together([(sql, params)])[0]


def _lock_sql(with_state: bool) -> str:
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    state = ", monitor_state" if with_state else ""
    return (f"SELECT id, steps, ended_at{state} FROM {quoted_table(TraceSession)} "
            f"WHERE workspace_id = %s AND external_id = %s{lock}")


def _known_sql(count: int) -> str:
    marks = ", ".join(["%s"] * count)
    return (f"SELECT event_id, session_id, step FROM {quoted_table(Event)} "
            f"WHERE workspace_id = %s AND source = %s AND event_id IN ({marks})")


@dataclass
class Locked:
    pk: int
    steps: int
    known: dict[str, tuple[int, int]]  # event_id -> (session id, step), for the ids posted
    after_live: list[dict] | None      # events from the cached monitor's next step on
    state: Any                         # monitor_state, or NotImplemented when not read
    ended: bool = False                # the session was ended: no new event is taken


def lock_and_read(workspace: Workspace, external_id: str, source: str, ids: set[str],
                  tail: tuple[int, int, int] | None) -> Locked:
    """The session's row, locked until the transaction ends (created when new); with it, the
    event ids already stored, and the events stored after this process's monitor (``tail``:
    its session id, next step and how many events at most; or, without one, the saved
    snapshot).  Concurrent creators meet on the unique (workspace, external_id): one inserts,
    the others wait for it and then lock the same row."""
    if connection.vendor == "postgresql":
        found = _lock_and_read_at_once(workspace, external_id, source, ids, tail)
    else:
        statements: list[tuple[str, Sequence]] = [(_lock_sql(tail is None),
                                                   [workspace.pk, external_id])]
        if ids:
            statements.append((_known_sql(len(ids)), [workspace.pk, source, *ids]))
        if tail is not None:
            statements.append((events_sql(limit=True), list(tail)))
        results = run_together(statements)
        row = results[0][0] if results[0] else None
        found = None
        if row is not None:
            known = {e: (s, step) for e, s, step in results[1]} if ids else {}
            after_live = (monitor_events(tail[0], results[-1]) if tail is not None else None)
            state = state_value(row[3]) if tail is None else NotImplemented
            found = Locked(row[0], row[1], known, after_live, state, row[2] is not None)
    if found is not None:
        return found
    TraceSession.objects.bulk_create(
        [TraceSession(workspace=workspace, external_id=external_id, source=SOURCE_LIVE)],
        ignore_conflicts=True)
    row = run(_lock_sql(True), [workspace.pk, external_id])[0]
    known = {}
    if ids:  # asked again: a concurrent creator may have stored some meanwhile
        known = {e: (s, step) for e, s, step in run(_known_sql(len(ids)),
                                                    [workspace.pk, source, *ids])}
    return Locked(row[0], row[1], known, None, state_value(row[3]), row[2] is not None)


def _lock_and_read_at_once(workspace: Workspace, external_id: str, source: str, ids: set[str],
                           tail: tuple[int, int, int] | None) -> Locked | None:
    """``lock_and_read`` in one statement (Postgres), or None when the session is new.

    What it reads besides the locked row is read as the statement started, which may be before
    it had to wait for the lock: then it misses what the delivery it waited for stored.  Both
    are safe: a missed event id makes the insert fail (the delivery starts over, and sees it),
    and missed events make the count of events after the cached monitor disagree with the
    session's steps (read from the locked row, which is current), so the monitor is not used."""
    params: list = []
    if ids:
        params += [workspace.pk, source, *ids]
    if tail is not None:
        params += list(tail)
    rows = run(_lock_and_read_sql(tail is None, len(ids), tail is not None),
               [*params, workspace.pk, external_id])
    if not rows:
        return None
    row = list(rows[0])
    pk, steps, ended = row[0], row[1], row.pop(2) is not None
    state = state_value(row.pop(2)) if tail is None else NotImplemented
    known: dict[str, tuple[int, int]] = {}
    if ids:
        known = {e: (s, step) for e, s, step in _json_value(row.pop(2)) or ()}
    after_live = None
    if tail is not None:
        after_live = [monitor_event(tail[0], step, lifeline, input, output, data, labels)
                      for step, lifeline, input, output, data, labels
                      in _json_value(row.pop(2)) or ()]
    return Locked(pk, steps, known, after_live, state, ended)


@functools.lru_cache(maxsize=64)
def _lock_and_read_sql(with_state: bool, ids: int, with_events: bool) -> str:
    columns = ["s.id", "s.steps", "s.ended_at"]
    if with_state:
        columns.append("s.monitor_state")
    if ids:
        columns.append(_known_column(ids))
    if with_events:
        columns.append(_tail_column())
    return (f"SELECT {', '.join(columns)} FROM {quoted_table(TraceSession)} s "
            "WHERE s.workspace_id = %s AND s.external_id = %s FOR UPDATE OF s")


def _known_column(ids: int) -> str:
    """Which of ``ids`` event ids are stored: a JSON array of [event id, session id, step]
    (parameters: workspace id, source, the ids)."""
    return ("(SELECT json_agg(json_build_array(e.event_id, e.session_id, e.step)) "
            f"FROM {quoted_table(Event)} e WHERE e.workspace_id = %s AND e.source = %s "
            f"AND e.event_id IN ({', '.join(['%s'] * ids)}))")


def _tail_column() -> str:
    """A session's events from a step on, at most a limit, as a JSON array of [step,
    lifeline, input, output, data, labels] (parameters: session id, step, limit)."""
    return ("(SELECT json_agg(json_build_array(g.step, g.lifeline, g.input, g.output, g.data, "
            f"g.labels) ORDER BY g.step) FROM (SELECT {', '.join(EVENT_COLUMNS)} "
            f"FROM {quoted_table(Event)} WHERE session_id = %s AND step >= %s ORDER BY step "
            "LIMIT %s) g)")


def _json_value(value: Any) -> Any:
    """A ``json`` column's value (psycopg parses it, unless told to hand the text over)."""
    return json.loads(value) if isinstance(value, (str, bytes)) else value


# Event's columns as ``insert_statements`` fills them, and which of them need the field's
# conversion for the database (JSON, timestamps); the others are passed as they are.
_INSERTED = ("workspace", "session", "upload", "step", "source", "event_id", "lifeline",
             "timestamp", "input", "output", "data", "labels", "message_id", "message_peer",
             "message_kind")
_CONVERTED = frozenset({"timestamp", "input", "output", "data", "labels"})
_ROWS_PER_INSERT = {"postgresql": 1000}  # else 60: SQLite allows 999 parameters a statement


def insert_statements(workspace: Workspace, session_pk: int, source: str,
                      rows: list[tuple[int, Clean]]) -> list[tuple[str, list]]:
    """``bulk_create`` written out (the same columns and conversions, no returned ids): an
    IntegrityError still means an event id another delivery stored first."""
    fields = [Event._meta.get_field(name) for name in _INSERTED]
    # Columns added to Event since are filled with their defaults, as bulk_create would.
    others = [f for f in Event._meta.concrete_fields
              if not f.primary_key and f.name not in _INSERTED]
    defaults = [f.get_db_prep_save(f.get_default(), connection) for f in others]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in [*fields, *others])
    prepare = [f.get_db_prep_save if f.name in _CONVERTED else None for f in fields]
    row_marks = "(" + ", ".join(["%s"] * (len(fields) + len(others))) + ")"
    per_statement = _ROWS_PER_INSERT.get(connection.vendor, 60)
    statements = []
    for start in range(0, len(rows), per_statement):
        chunk = rows[start:start + per_statement]
        values: list = []
        for step, c in chunk:
            raw = (workspace.pk, session_pk, None, step, source, c.event_id, c.lifeline,
                   c.timestamp, c.input, c.output, c.data, c.labels, c.message_id,
                   c.message_peer, c.message_kind)
            values.extend(value if convert is None else convert(value, connection)
                          for convert, value in zip(prepare, raw))
            values.extend(defaults)
        marks = ", ".join([row_marks] * len(chunk))
        statements.append((f"INSERT INTO {quoted_table(Event)} ({columns}) VALUES {marks}",
                           values))
    return statements


def session_update(session_pk: int, steps: int, touched: bool, state: dict | None,
                   attention: int | None = None) -> tuple[str, list]:
    sets, params = ["steps = %s"], [steps]
    if attention is not None:
        sets.append("attention = %s")
        params.append(attention)
    if touched:
        sets.append("last_event_at = %s")
        params.append(TraceSession._meta.get_field("last_event_at").get_db_prep_save(
            timezone.now(), connection))
    if state is not None:
        sets.append("monitor_state = %s")
        params.append(TraceSession._meta.get_field("monitor_state").get_db_prep_save(
            state, connection))
    params.append(session_pk)
    return f"UPDATE {quoted_table(TraceSession)} SET {', '.join(sets)} WHERE id = %s", params


def write_delivery(inserts: list[tuple[str, list]], update: tuple[str, list] | None) -> None:
    """The inserts, then the session's update: on Postgres one statement when the events fit
    in one insert (a data-modifying WITH), else in one round trip."""
    if connection.vendor == "postgresql" and len(inserts) == 1 and update is not None:
        (insert, values), (sql, params) = inserts[0], update
        run(f"WITH inserted AS ({insert}) {sql}", [*values, *params])
    elif inserts or update is not None:
        run_together([*inserts, *([update] if update is not None else [])])
