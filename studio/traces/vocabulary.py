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

Each upload's part of every entry is kept apart (``VocabularyShare``: its events and its own
first examples), written by ``record`` with the entries for every upload batch.  Erasing an
upload (``studio.traces.erasure``), in its transaction, takes its shares off their entries
without reading an event (``take_off_upload``); the entries it showed get their examples again
from the other uploads' shares.  Erasing a session, or an upload stored before shares were kept,
counts the erased events again and takes their counts off the entries and shares
(``forget_erased_names``) - or, when fewer events are left than erased, counts the events left
and sets the entries and shares to that (``recount_names_left``); every example is dropped
(``forget_erased_values``) and a task recounts the workspace after commit (``rebuild``):
examples come back from the events left, and counts that were short before (events loaded
before the vocabulary was kept, paths past ``MAX_PATHS``) are set right.  Either way an entry
left with no event goes, so a name made from a value (``tool_call:send_money_to_john_doe``)
goes with the last event that showed it.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Iterable, Mapping

from django.db import connection, transaction
from django.db.models import F
from django.db.models.functions import Collate
from django.utils import timezone

from studio import tasks
from studio.logic import vocabulary as pure

from .formats.base import fast_loads
from .models import Event, Upload, VocabularyEntry, VocabularyShare

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


def record(workspace, counts: Counts, upload_id: int | None = None) -> int:
    """Add ``counts`` (``{(kind, name, json_type, carrier): (events, examples)}``, what a
    ``Collector`` counted) to ``workspace``'s vocabulary; returns how many entries it wrote.
    Call it inside the transaction that stores the events: a rollback takes the counts with
    them, and this process remembers what it wrote only once committed.  New path names stop
    at ``pure.MAX_PATHS`` per workspace.  ``upload_id``: the events are a batch of that upload,
    whose shares (``VocabularyShare``) get the same counts (its loader holds the upload's row
    lock: no other writer adds to them)."""
    key = _key(workspace)
    known = _known(key)
    rows = []
    for entry, (events, examples) in counts.items():
        if len(entry[1]) > NAME_LIMIT or len(entry[3]) > CARRIER_LIMIT:
            continue
        if upload_id is not None:
            rows.append((entry, events, list(examples[:pure.MAX_EXAMPLES])))
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
    shares = None
    if upload_id is not None:
        shares = rows
        rows = []
        for entry, events, examples in shares:
            stored = known.get(entry)
            if stored is not None:
                examples = ([] if len(stored) >= pure.MAX_EXAMPLES
                            else [e for e in examples if e not in stored])
            rows.append((entry, events, examples))
    returned = _add(workspace.pk, rows, read_back=shares is not None)
    if shares is not None:
        _add_shares(upload_id, [(returned[entry][0], events, examples)
                                for entry, events, examples in shares])
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


def _add_shares(upload_id: int, rows: list[tuple]) -> None:
    """Upsert the upload's shares ``rows`` (``(entry id, events, examples)``): a new share is
    inserted, a stored one gets the events added and the examples it lacks (up to
    ``MAX_EXAMPLES``).  Only the upload's loader (or a rebuild, or an erasure holding the
    entries' locks) writes them."""
    table = VocabularyShare._meta.db_table
    json_param = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
    per_statement = min(_ROWS_PER_STATEMENT, (connection.features.max_query_params or 8000) // 4)
    wanted = any(examples for _, _, examples in rows)
    brought = {entry_id: examples for entry_id, _, examples in rows}
    changed = []
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per_statement):
            part = rows[start:start + per_statement]
            values, params = [], []
            for entry_id, events, examples in part:
                values.append(f"(%s, %s, %s, {json_param})")
                params += [entry_id, upload_id, events, json.dumps(examples)]
            cursor.execute(
                f"INSERT INTO {table} (entry_id, upload_id, events, examples) "
                f"VALUES {', '.join(values)} ON CONFLICT (upload_id, entry_id) DO UPDATE "
                f"SET events = {table}.events + excluded.events"
                + (" RETURNING id, entry_id, examples" if wanted else ""), params)
            if wanted:
                for ident, entry_id, stored in cursor.fetchall():
                    if isinstance(stored, str | bytes):
                        stored = json.loads(stored)
                    stored = stored or []
                    merged = merged_examples(stored, brought[entry_id])
                    if merged != stored:
                        changed.append(VocabularyShare(pk=ident, examples=merged))
    VocabularyShare.objects.bulk_update(changed, ["examples"], batch_size=500)


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
    before it was kept, after events were erased, or to check it), with each upload's share of
    it; returns the entries found.  Every upload of the workspace has its share kept afterwards.

    Exact while uploads and deliveries go on: the stored rows and the events are read in one
    snapshot, and each row gets the difference between the two added (so what a writer adds
    after the snapshot stays added); rows no stored event shows any more are removed.  Their
    examples become those of the stored events."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        before = {(kind, name, type_, carrier): events for kind, name, type_, carrier, events
                  in VocabularyEntry.objects.filter(workspace=workspace).values_list(
                      "kind", "name", "json_type", "carrier", "events")}
        shares_before = {(upload_id, (kind, name, type_, carrier)): events
                         for upload_id, kind, name, type_, carrier, events
                         in VocabularyShare.objects.filter(entry__workspace=workspace)
                         .values_list("upload_id", *(f"entry__{f}" for f in _ENTRY_FIELDS),
                                      "events")}
        uploads = list(Upload.objects.filter(workspace=workspace).values_list("pk", flat=True))
        # In the order the events were stored: the examples are those of the first events, as
        # the uploads recorded them, not whatever order the table's pages happen to hold.
        counted, by_upload = _counted(Event.objects.filter(workspace=workspace), chunk=chunk,
                                      ordered=True)
    found = {entry: value for entry, value in counted.items()
             if len(entry[1]) <= NAME_LIMIT and len(entry[3]) <= CARRIER_LIMIT}
    shares_found = {(upload_id, entry): value for upload_id, counts in by_upload.items()
                    for entry, value in counts.items() if entry in found}
    nothing = (0, [])
    changes = [(entry, found.get(entry, nothing)[0] - before.get(entry, 0),
                found.get(entry, nothing)[1]) for entry in {*found, *before}]
    with transaction.atomic():
        # The uploads first (as their loaders and erasures lock them, before the entries): one
        # erased since the snapshot gets no share.
        uploads = set(Upload.objects.filter(pk__in=uploads).order_by("pk")
                      .select_for_update().values_list("pk", flat=True))
        if changes:
            returned = _add(workspace.pk, changes, read_back=True)
            VocabularyEntry.objects.bulk_update(
                [VocabularyEntry(pk=returned[entry][0], examples=examples)
                 for entry, _, examples in changes if returned[entry][1] != examples],
                ["examples"], batch_size=500)
            _set_shares({(upload_id, returned[entry][0]):
                         (shares_found.get((upload_id, entry), nothing)[0]
                          - shares_before.get((upload_id, entry), 0),
                          shares_found.get((upload_id, entry), nothing)[1])
                         for upload_id, entry in {*shares_found, *shares_before}
                         if upload_id in uploads})
            gone = [returned[entry][0] for entry in before if entry not in found]
            for start in range(0, len(gone), 1000):
                VocabularyEntry.objects.filter(pk__in=gone[start:start + 1000],
                                               events__lte=0).delete()
        # (an upload erased since the snapshot is not marked: it is gone)
        Upload.objects.filter(pk__in=uploads, vocabulary_shared=False).update(
            vocabulary_shared=True)
        transaction.on_commit(forget_stored)
    return len(found)


def _set_shares(changes: dict[tuple[int, int], tuple[int, list]]) -> None:
    """A rebuild's shares: ``changes`` is ``{(upload id, entry id): (events to add, examples)}``;
    a share left with no event is deleted."""
    rows = [(entry_id, upload_id, events, examples)
            for (upload_id, entry_id), (events, examples) in sorted(changes.items())]
    table = VocabularyShare._meta.db_table
    json_param = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
    per_statement = min(_ROWS_PER_STATEMENT, (connection.features.max_query_params or 8000) // 4)
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per_statement):
            part = rows[start:start + per_statement]
            cursor.execute(
                f"INSERT INTO {table} (entry_id, upload_id, events, examples) VALUES "
                + ", ".join(f"(%s, %s, %s, {json_param})" for _ in part)
                + " ON CONFLICT (upload_id, entry_id) DO UPDATE "
                f"SET events = {table}.events + excluded.events, examples = excluded.examples",
                [v for entry_id, upload_id, events, examples in part
                 for v in (entry_id, upload_id, events, json.dumps(examples))])
    emptied = {upload_id for (upload_id, _), (events, _) in changes.items() if events < 0}
    if emptied:
        VocabularyShare.objects.filter(upload_id__in=emptied, events__lte=0).delete()


def take_off_upload(workspace, upload_id: int) -> tuple[int, bool]:
    """In the erasure of an upload whose shares are kept (``Upload.vocabulary_shared``): take
    its shares off their entries, without reading an event, and delete the entries left with
    no event and the upload's shares.  Returns how many entries were deleted, and whether some
    entry's examples were dropped for a recount after commit.

    The entries the upload showed get their examples again from the other uploads' shares, in
    the order the uploads were made (the first values of the first uploads, as a recount reads
    them when the uploads were loaded one after the other); the examples of an entry the upload
    did not show are not changed (an erased event held none of them).  An entry also shown by
    events no share counts (live deliveries, uploads stored before shares were kept) has its
    examples dropped, since which of them came from the erased events is not known: the
    recount enqueued after commit brings them back."""
    erased = {entry_id: (events, examples) for entry_id, events, examples in
              VocabularyShare.objects.filter(upload_id=upload_id)
              .values_list("entry_id", "events", "examples")}
    if not erased:
        return 0, False
    entries = VocabularyEntry.objects.filter(workspace=workspace, pk__in=list(erased))
    # Locked in the order every writer takes them (the writers sort in Python: by code point).
    if connection.vendor == "postgresql":
        entries = entries.order_by(*(Collate(f, "C") for f in _ENTRY_FIELDS))
    else:
        entries = entries.order_by(*_ENTRY_FIELDS)
    locked = {ident: (events, examples, *erased[ident]) for ident, events, examples
              in entries.select_for_update().values_list("id", "events", "examples")}
    VocabularyShare.objects.filter(upload_id=upload_id).delete()
    others: dict[int, list] = {}
    for entry_id, events, examples in (VocabularyShare.objects.filter(entry_id__in=locked)
                                       .order_by("upload_id")
                                       .values_list("entry_id", "events", "examples")):
        others.setdefault(entry_id, []).append((events, examples))
    gone, changed, stale = [], [], False
    for ident, (events, examples, taken, taken_examples) in locked.items():
        left = events - taken
        if left <= 0:
            gone.append(ident)
            continue
        entry = VocabularyEntry(pk=ident, events=left, examples=examples)
        if set(map(_hashable, examples)) & set(map(_hashable, taken_examples)):
            shares = others.get(ident, [])
            if sum(n for n, _ in shares) == left:
                merged: list = []
                for _, more in shares:
                    merged = merged_examples(merged, more)
                entry.examples = merged
            else:
                entry.examples = []
                stale = True
        changed.append(entry)
    VocabularyEntry.objects.bulk_update(changed, ["events", "examples"], batch_size=500)
    deleted = 0
    for start in range(0, len(gone), 1000):
        deleted += _delete_entries(VocabularyEntry.objects.filter(pk__in=gone[start:start + 1000]))
    if changed or gone:
        transaction.on_commit(forget_stored)
    return deleted, stale


def _hashable(value):
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else value


def _delete_entries(entries) -> int:
    """Delete ``entries`` (a queryset) and their shares; how many entries went."""
    return entries.delete()[1].get(VocabularyEntry._meta.label, 0)


def _counted(events, max_paths: int = pure.MAX_PATHS, chunk: int = 2000,
             ordered: bool = False) -> tuple[dict, dict[int, dict]]:
    """What ``events`` (a queryset) show, counted: in all, and by the upload that brought them
    (the events of no upload in all only).  ``ordered``: read in the order they were stored
    (the examples are those of the first events), else in whatever order is cheapest."""
    collector = pure.Collector(max_paths=max_paths)
    by_upload: dict[int, pure.Collector] = {}
    for upload_id, input_, output, data, labels in _read(events, chunk, with_upload=True,
                                                         ordered=ordered):
        collector.add(input_, output, data, labels)
        if upload_id is not None:
            share = by_upload.get(upload_id)
            if share is None:
                share = by_upload[upload_id] = pure.Collector(max_paths=sys.maxsize)
            share.add(input_, output, data, labels)
    return collector.counts(), {u: c.counts() for u, c in by_upload.items()}


def forget_erased_names(workspace, events) -> int:
    """In an erasure's transaction, before ``events`` (a queryset of the events being erased)
    are deleted: take their counts off the workspace's entries and off their uploads' shares
    (whose examples are dropped), and delete the entries left with none; returns how many were
    deleted."""
    counts, by_upload = _counted(events)
    taken = [(entry, -count, []) for entry, (count, _) in counts.items()
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
    _take_off_shares({(upload_id, returned[entry][0]): count
                      for upload_id, shown in by_upload.items()
                      for entry, (count, _) in shown.items() if entry in returned})
    emptied = [returned[entry][0] for entry, _, _ in taken]
    deleted = 0
    for start in range(0, len(emptied), 1000):
        deleted += _delete_entries(VocabularyEntry.objects.filter(
            pk__in=emptied[start:start + 1000], events__lte=0))
    return deleted


def _take_off_shares(taken: dict[tuple[int, int], int]) -> None:
    """``{(upload id, entry id): events}`` taken off those shares, their examples dropped (a
    recount gives them back); a share left with none is deleted."""
    shares = {(upload_id, entry_id): ident for ident, upload_id, entry_id in
              VocabularyShare.objects.filter(upload_id__in={u for u, _ in taken},
                                             entry_id__in={e for _, e in taken})
              .values_list("id", "upload_id", "entry_id")}
    changed = [VocabularyShare(pk=shares[key], events=F("events") - n, examples=[])
               for key, n in taken.items() if key in shares]
    VocabularyShare.objects.bulk_update(changed, ["events", "examples"], batch_size=500)
    if changed:
        VocabularyShare.objects.filter(pk__in=[s.pk for s in changed], events__lte=0).delete()


def recount_names_left(workspace) -> int:
    """In an erasure's transaction, after the erased events are deleted: recount the entries
    and the uploads' shares from the workspace's events left, and delete the entries (and
    shares) no event shows any more; returns how many entries were deleted.  What an erasure
    does instead of ``forget_erased_names`` when fewer events are left than erased (a session
    that was most of the workspace): it reads the smaller side.  A share whose count changed
    has its examples dropped (the recount after commit gives them back).

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
    shown, by_upload = _counted(Event.objects.filter(workspace=workspace), max_paths=sys.maxsize)
    gone, recounted = [], []
    for entry, (ident, events) in stored.items():
        found = shown.get(entry)
        if found is None:
            gone.append(ident)
        elif found[0] != events:
            recounted.append(VocabularyEntry(pk=ident, events=found[0]))
    VocabularyEntry.objects.bulk_update(recounted, ["events"], batch_size=500)
    keys = {ident: entry for entry, (ident, _) in stored.items()}
    shares_gone, shares_recounted = [], []
    for ident, upload_id, entry_id, events in (VocabularyShare.objects
                                               .filter(entry__workspace=workspace)
                                               .values_list("id", "upload_id", "entry_id",
                                                            "events")):
        found = by_upload.get(upload_id, {}).get(keys.get(entry_id))
        if found is None:
            shares_gone.append(ident)
        elif found[0] != events:
            shares_recounted.append(VocabularyShare(pk=ident, events=found[0], examples=[]))
    VocabularyShare.objects.bulk_update(shares_recounted, ["events", "examples"], batch_size=500)
    for start in range(0, len(shares_gone), 1000):
        VocabularyShare.objects.filter(pk__in=shares_gone[start:start + 1000]).delete()
    deleted = 0
    for start in range(0, len(gone), 1000):
        deleted += _delete_entries(VocabularyEntry.objects.filter(pk__in=gone[start:start + 1000]))
    return deleted


def _read(events, chunk: int = 2000, with_upload: bool = False, ordered: bool = False):
    """``(input, output, data, labels)`` of each of ``events`` (a queryset), or ``(upload_id,
    input, ...)`` ``with_upload``; in the order they were stored (their ids) when ``ordered``,
    else in whatever order is cheapest.
    Postgres packs each row into one JSON array, decoded at once: a third of the time of the
    ORM decoding four JSON fields one by one (SQL NULL and JSON null both read as None, as the
    ORM reads them)."""
    fields = ("upload_id",) * with_upload + ("input", "output", "data", "labels")
    if connection.vendor != "postgresql":
        rows = events.order_by(*(("pk",) if ordered else ())).values_list(*fields)
        yield from rows.iterator(chunk_size=chunk)
        return
    # Ordered: by the events' ids (the order they were stored), outside the packing query, as
    # SQL keeps no order of a subquery.
    rows = events.order_by().values_list(*fields, *(("pk",) if ordered else ()))
    select, params = rows.query.sql_with_params()
    order = " ORDER BY v.pk" if ordered else ""
    with connection.chunked_cursor() as cursor:
        cursor.execute(f"SELECT json_build_array({', '.join('v.' + f for f in fields)})::text "
                       f"FROM ({select}) v{order}", params)
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
