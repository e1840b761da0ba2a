"""Writing a workspace's vocabulary (``VocabularyEntry``) as its events arrive, and recounting
it from the stored events.

What one upload batch or live delivery shows is counted in Python, every event
(``studio.logic.vocabulary.Collector``): ``{(kind, name, json_type, carrier): (events,
examples)}``.  ``record`` adds it in one upsert (``INSERT ... ON CONFLICT DO UPDATE SET events =
events + excluded.events``), in the transaction that stores the events, so the counts are those
of the committed events.  Concurrent writers (two uploads, live deliveries) lose no increment:
the database adds each one to the row as it stands, under the row's lock.  Every writer takes its
rows' locks in the same order (the entries sorted; one statement per thousand), so two writers
wait for each other instead of deadlocking.  Examples are merged afterwards, under those locks,
into the rows that were not full, distinct, up to ``MAX_EXAMPLES``.

Each process remembers the examples it knows stored (for ``REMEMBER_SECONDS``): a live delivery
whose entries are all known, and whose rows are full of examples or hold its values already,
costs that one statement.

Erasing events (``studio.traces.erasure``), in its transaction: the erased events are counted
again and their counts taken off (``forget_erased_names``) - or, when fewer events are left than
erased, the events left are counted and the entries set to that (``recount_names_left``); an
entry left with no event goes, so a name made from a value (``tool_call:send_money_to_john_doe``)
goes with the last event that showed it; and every example is dropped
(``forget_erased_values``).  After commit a task recounts the workspace (``rebuild``): examples
come back from the events left, and counts that were short before (events loaded before the
vocabulary was kept, paths past ``MAX_PATHS``) are set right - an entry such a short count
removed too early comes back then.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Iterable, Mapping

from django.db import connection, transaction
from django.db.models.functions import Collate
from django.utils import timezone

from studio import tasks
from studio.logic import vocabulary as pure

from .formats.base import fast_loads
from .models import Event, VocabularyEntry

logger = logging.getLogger(__name__)
NAME_LIMIT = VocabularyEntry._meta.get_field("name").max_length
CARRIER_LIMIT = VocabularyEntry._meta.get_field("carrier").max_length
# How long a process trusts its memory of what is stored (a rebuild elsewhere may change rows).
REMEMBER_SECONDS = 300.0
_REMEMBER_MAX = 50_000
# Entries written by one statement (8 parameters each), at most.
_ROWS_PER_STATEMENT = 1000

_lock = threading.Lock()
# (workspace id, workspace creation time) -> (until, {entry: examples known stored}).  The
# creation time keeps a reused id (SQLite after a rollback) from inheriting another workspace's
# memory.
_stored: dict[tuple, tuple[float, dict]] = {}
# (workspace id, creation time) -> the Collector counting its live deliveries (``counts_of``).
_collectors: dict[tuple, pure.Collector] = {}
_COLLECTORS_MAX = 64
_COLLECTOR_SIGNATURES_MAX = 10_000  # a collector that met more sets of paths starts afresh
_collecting = threading.Lock()

_ENTRY_FIELDS = ("kind", "name", "json_type", "carrier")  # an entry's key, in the writers' order
Counts = Mapping[tuple[str, str, str, str], tuple[int, list]]


def _key(workspace) -> tuple:
    return (workspace.pk, getattr(workspace, "created_at", None))


def forget_stored() -> None:
    """Forget what this process wrote (tests; after a rebuild), and the collectors it kept."""
    with _lock:
        _stored.clear()
    with _collecting:
        _collectors.clear()


def _known(key: tuple) -> dict:
    now = time.monotonic()
    with _lock:
        found = _stored.get(key)
        if found is None or found[0] < now:
            return {}
        return found[1]


def _remember(key: tuple, entries: Mapping) -> None:
    with _lock:
        until, known = _stored.get(key, (0.0, {}))
        if until < time.monotonic():
            until, known = time.monotonic() + REMEMBER_SECONDS, {}
        if sum(len(k) for _, k in _stored.values()) > _REMEMBER_MAX:
            _stored.clear()
        known.update(entries)
        _stored[key] = (until, known)


def merged_examples(stored: Iterable, more: Iterable) -> list:
    """``stored`` then the values of ``more`` it lacks, distinct, at most ``MAX_EXAMPLES``."""
    out: list = []
    for value in (*stored, *more):
        if value not in out:
            out.append(value)
            if len(out) >= pure.MAX_EXAMPLES:
                break
    return out


def record(workspace, counts: Counts) -> int:
    """Add ``counts`` (``{(kind, name, json_type, carrier): (events, examples)}``, what a
    ``Collector`` counted) to ``workspace``'s vocabulary; returns how many entries it wrote.
    Call it inside the transaction that stores the events: a rollback takes the counts with
    them, and this process remembers what it wrote only once committed.  New path names stop
    at ``pure.MAX_PATHS`` per workspace."""
    key = _key(workspace)
    known = _known(key)
    rows = []
    for entry, (events, examples) in counts.items():
        if len(entry[1]) > NAME_LIMIT or len(entry[3]) > CARRIER_LIMIT:
            continue
        stored = known.get(entry)
        if stored is not None:
            examples = ([] if len(stored) >= pure.MAX_EXAMPLES
                        else [e for e in examples if e not in stored])
        if events or examples:
            rows.append((entry, events, list(examples[:pure.MAX_EXAMPLES])))
    new_paths = {entry[1] for entry, _, _ in rows if entry[0] == pure.PATH and entry not in known}
    if new_paths:
        allowed = _path_room(workspace, new_paths)
        if allowed is not None:
            rows = [r for r in rows if r[0][0] != pure.PATH or r[0] in known
                    or r[0][1] in allowed]
    if not rows:
        return 0
    returned = _add(workspace.pk, rows)
    if returned is not None:
        changed = []
        remember = {}
        for entry, events, examples in rows:
            ident, stored = returned[entry]
            merged = merged_examples(stored, examples)
            if merged != stored:
                changed.append(VocabularyEntry(pk=ident, examples=merged))
            remember[entry] = tuple(merged)
        # The rows are locked by the statement that added to them: no other writer is between.
        VocabularyEntry.objects.bulk_update(changed, ["examples"], batch_size=500)
    else:
        remember = {entry: known.get(entry, ()) for entry, _, _ in rows}
    transaction.on_commit(lambda: _remember(key, remember))
    return len(rows)


def _path_room(workspace, names: set[str]) -> set[str] | None:
    """Which of the path ``names`` the workspace may take (None: all of them)."""
    paths = VocabularyEntry.objects.filter(workspace_id=workspace.pk, kind=pure.PATH)
    total = paths.values("name").distinct().count()
    if total + len(names) <= pure.MAX_PATHS:
        return None
    stored = set(paths.filter(name__in=names).values_list("name", flat=True).distinct())
    fresh = sorted(names - stored)[:max(pure.MAX_PATHS - total, 0)]
    return stored | set(fresh)


def _add(workspace_id: int, rows: list[tuple], read_back: bool = False) -> dict | None:
    """Upsert ``rows`` (``(entry, events, examples)``): a new entry is inserted with its events
    and examples, a stored one gets its events added.  Returns ``{entry: (id, examples
    stored)}`` when some row brings examples or ``read_back`` (else None: nothing is read
    back)."""
    # Every writer locks its rows in this order: two writers wait for each other, never in a
    # cycle (a deadlock).
    rows = sorted(rows, key=lambda row: row[0])
    table = VocabularyEntry._meta.db_table
    postgres = connection.vendor == "postgresql"
    json_param = "%s::jsonb" if postgres else "%s"
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    wanted = read_back or any(examples for _, _, examples in rows)
    returned: dict = {}
    per_statement = min(_ROWS_PER_STATEMENT, (connection.features.max_query_params or 8000) // 8)
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per_statement):
            part = rows[start:start + per_statement]
            values, params = [], []
            for (kind, name, type_, carrier), events, examples in part:
                values.append(f"(%s, %s, %s, %s, %s, %s, {json_param}, %s)")
                params += [workspace_id, kind, name, type_, carrier, events,
                           json.dumps(examples), now]
            cursor.execute(
                f"INSERT INTO {table} (workspace_id, kind, name, json_type, carrier, events, "
                f"examples, first_seen) VALUES {', '.join(values)} "
                "ON CONFLICT (workspace_id, kind, name, json_type, carrier) DO UPDATE "
                f"SET events = {table}.events + excluded.events"
                + (" RETURNING id, kind, name, json_type, carrier, examples" if wanted else ""),
                params)
            if wanted:
                for ident, kind, name, type_, carrier, examples in cursor.fetchall():
                    if isinstance(examples, str | bytes):
                        examples = json.loads(examples)
                    returned[(kind, name, type_, carrier)] = (ident, examples or [])
    return returned if wanted else None


def counts_of(workspace, events: Iterable[tuple]) -> dict:
    """What ``events`` (``(input, output, data, labels)`` each) of ``workspace`` show, counted
    (a live delivery; an upload batch some of whose events were not stored, recounted from
    those that were).  The collector is kept for the workspace: what it learnt of the paths
    and shapes of its events makes the next delivery cheap."""
    key = _key(workspace)
    with _collecting:
        collector = _collectors.pop(key, None)
        if collector is None or collector.signatures > _COLLECTOR_SIGNATURES_MAX:
            collector = pure.Collector()
        _collectors[key] = collector  # the most recently used last
        while len(_collectors) > _COLLECTORS_MAX:
            del _collectors[next(iter(_collectors))]
        try:
            for input_, output, data, labels in events:
                collector.add(input_, output, data, labels)
        finally:
            found = collector.take()
    return found


def rebuild(workspace, chunk: int = 2000) -> int:
    """The workspace's vocabulary recounted from every stored event (for workspaces loaded
    before it was kept, after events were erased, or to check it); returns the entries found.

    Exact while uploads and deliveries go on: the stored rows and the events are read in one
    snapshot, and each row gets the difference between the two added (so what a writer adds
    after the snapshot stays added); rows no stored event shows any more are removed.  Their
    examples become those of the stored events."""
    collector = pure.Collector()
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        before = {(kind, name, type_, carrier): events for kind, name, type_, carrier, events
                  in VocabularyEntry.objects.filter(workspace=workspace).values_list(
                      "kind", "name", "json_type", "carrier", "events")}
        # In the order the events were stored: the examples are those of the first events, as
        # the uploads recorded them, not whatever order the table's pages happen to hold.
        rows = (Event.objects.filter(workspace=workspace).order_by("pk")
                .values_list("input", "output", "data", "labels").iterator(chunk_size=chunk))
        for input_, output, data, labels in rows:
            collector.add(input_, output, data, labels)
    found = {entry: value for entry, value in collector.counts().items()
             if len(entry[1]) <= NAME_LIMIT and len(entry[3]) <= CARRIER_LIMIT}
    nothing = (0, [])
    changes = [(entry, found.get(entry, nothing)[0] - before.get(entry, 0),
                found.get(entry, nothing)[1]) for entry in {*found, *before}]
    with transaction.atomic():
        if changes:
            returned = _add(workspace.pk, changes, read_back=True)
            VocabularyEntry.objects.bulk_update(
                [VocabularyEntry(pk=returned[entry][0], examples=examples)
                 for entry, _, examples in changes if returned[entry][1] != examples],
                ["examples"], batch_size=500)
            gone = [returned[entry][0] for entry in before if entry not in found]
            for start in range(0, len(gone), 1000):
                VocabularyEntry.objects.filter(pk__in=gone[start:start + 1000],
                                               events__lte=0).delete()
        transaction.on_commit(forget_stored)
    return len(found)


def forget_erased_names(workspace, events) -> int:
    """In an erasure's transaction, before ``events`` (a queryset of the events being erased)
    are deleted: take their counts off the workspace's entries and delete the entries left with
    none; returns how many were deleted."""
    collector = pure.Collector()
    for input_, output, data, labels in _read(events):
        collector.add(input_, output, data, labels)
    taken = [(entry, -count, []) for entry, (count, _) in collector.counts().items()
             if len(entry[1]) <= NAME_LIMIT and len(entry[3]) <= CARRIER_LIMIT]
    if not taken:
        return 0
    stored = {(kind, name, type_, carrier) for kind, name, type_, carrier in
              VocabularyEntry.objects.filter(workspace=workspace).values_list(
                  "kind", "name", "json_type", "carrier")}
    taken = [row for row in taken if row[0] in stored]  # never insert a row with a negative count
    if not taken:
        return 0
    returned = _add(workspace.pk, taken, read_back=True)
    emptied = [returned[entry][0] for entry, _, _ in taken]
    deleted = 0
    for start in range(0, len(emptied), 1000):
        deleted += VocabularyEntry.objects.filter(pk__in=emptied[start:start + 1000],
                                                  events__lte=0).delete()[0]
    return deleted


def recount_names_left(workspace) -> int:
    """In an erasure's transaction, after the erased events are deleted: recount the entries
    from the workspace's events left and delete those no event shows any more; returns how many
    were deleted.  What an erasure does instead of ``forget_erased_names`` when fewer events are
    left than erased (an upload that was most of the workspace): it reads the smaller side.

    The workspace's entries are locked first, in the order every writer takes them, so a
    writer adding to an entry either committed its events before the recount reads them or
    adds its count after the erasure commits."""
    entries = VocabularyEntry.objects.filter(workspace=workspace).select_for_update()
    if connection.vendor == "postgresql":  # the writers sort in Python: by code point
        entries = entries.order_by(*(Collate(f, "C") for f in _ENTRY_FIELDS))
    else:
        entries = entries.order_by(*_ENTRY_FIELDS)
    stored = {(kind, name, type_, carrier): (ident, events) for ident, kind, name, type_,
              carrier, events in entries.values_list("id", *_ENTRY_FIELDS, "events")}
    if not stored:
        return 0
    # Every path counted, however many: only the stored entries are looked up.
    collector = pure.Collector(max_paths=sys.maxsize)
    for input_, output, data, labels in _read(Event.objects.filter(workspace=workspace)):
        collector.add(input_, output, data, labels)
    shown = collector.counts()
    gone, recounted = [], []
    for entry, (ident, events) in stored.items():
        found = shown.get(entry)
        if found is None:
            gone.append(ident)
        elif found[0] != events:
            recounted.append(VocabularyEntry(pk=ident, events=found[0]))
    VocabularyEntry.objects.bulk_update(recounted, ["events"], batch_size=500)
    deleted = 0
    for start in range(0, len(gone), 1000):
        deleted += VocabularyEntry.objects.filter(pk__in=gone[start:start + 1000]).delete()[0]
    return deleted


def _read(events, chunk: int = 2000):
    """``(input, output, data, labels)`` of each of ``events`` (a queryset).  Postgres packs each
    row into one JSON array, decoded at once: a third of the time of the ORM decoding four JSON
    fields one by one (SQL NULL and JSON null both read as None, as the ORM reads them)."""
    rows = events.order_by().values_list("input", "output", "data", "labels")
    if connection.vendor != "postgresql":
        yield from rows.iterator(chunk_size=chunk)
        return
    select, params = rows.query.sql_with_params()
    with connection.chunked_cursor() as cursor:
        cursor.execute("SELECT json_build_array(v.input, v.output, v.data, v.labels)::text "
                       f"FROM ({select}) v", params)
        while packed := cursor.fetchmany(chunk):
            for (row,) in packed:
                yield fast_loads(row)


def forget_erased_values(workspace) -> None:
    """After an erasure, in its transaction: no example value of an erased event stays in the
    vocabulary (every example is dropped; new events and the recount fill them again), and the
    counts are recounted from the events left once the erasure commits."""
    VocabularyEntry.objects.filter(workspace=workspace).exclude(examples=[]).update(examples=[])
    workspace_id = workspace.pk
    enqueue_rebuild(workspace_id)


def enqueue_rebuild(workspace_id: int) -> None:
    """Recount the workspace's vocabulary in a worker, once the current transaction commits."""

    def unavailable(exc) -> None:
        # The examples are already gone; the counts stay high until `manage.py
        # rebuild_vocabulary` runs or the next erasure enqueues a recount.
        logger.warning("workspace %s: the broker is unavailable; vocabulary recount not "
                       "enqueued", workspace_id)

    tasks.enqueue(tasks.REBUILD_VOCABULARY, workspace_id, unavailable=unavailable)
