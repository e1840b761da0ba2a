"""Writing a workspace's vocabulary (``VocabularyEntry``) as its events arrive, and rebuilding
it from the stored events.

What one upload batch or live delivery shows is collected in Python as a set of
``(kind, name, json_type)`` (``studio.logic.vocabulary.collect_event``) and written with one
bulk insert that skips rows already there.  Each process remembers what it wrote for a while,
so a delivery whose tools and fields are all known writes nothing at all.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from django.db import transaction

from studio.logic import vocabulary as pure

from .models import Event, VocabularyEntry

NAME_LIMIT = VocabularyEntry._meta.get_field("name").max_length
# How long a process trusts its memory of what is stored (a rebuild elsewhere may remove rows).
REMEMBER_SECONDS = 300.0
_REMEMBER_MAX = 50_000

_lock = threading.Lock()
# (workspace id, workspace creation time) -> (until, entries known stored).  The creation time
# keeps a reused id (SQLite after a rollback) from inheriting another workspace's memory.
_stored: dict[tuple, tuple[float, set]] = {}


def _key(workspace) -> tuple:
    return (workspace.pk, getattr(workspace, "created_at", None))


def forget_stored() -> None:
    """Forget what this process wrote (tests; after a rebuild)."""
    with _lock:
        _stored.clear()


def _known(key: tuple) -> set:
    now = time.monotonic()
    with _lock:
        found = _stored.get(key)
        if found is None or found[0] < now:
            return set()
        return found[1]


def _remember(key: tuple, entries: Iterable) -> None:
    with _lock:
        until, known = _stored.get(key, (0.0, set()))
        if until < time.monotonic():
            until, known = time.monotonic() + REMEMBER_SECONDS, set()
        if sum(len(k) for _, k in _stored.values()) > _REMEMBER_MAX:
            _stored.clear()
        known.update(entries)
        _stored[key] = (until, known)


def record(workspace, entries: set) -> int:
    """Store ``entries`` (``(kind, name, json_type)``) for ``workspace`` in one bulk insert of
    those this process has not stored lately; returns how many rows it offered.  Call it inside
    the transaction that stores the events: a rollback takes the rows with it, and this
    process remembers them only once committed.  New paths stop at ``pure.MAX_PATHS`` per
    workspace."""
    key = _key(workspace)
    known = _known(key)
    new = sorted(e for e in entries if e not in known and len(e[1]) <= NAME_LIMIT)
    if not new:
        return 0
    paths = [e for e in new if e[0] == pure.PATH]
    if paths:
        room = pure.MAX_PATHS - VocabularyEntry.objects.filter(
            workspace_id=workspace.pk, kind=pure.PATH).count()
        if room < len(paths):
            stored_paths = set(VocabularyEntry.objects.filter(
                workspace_id=workspace.pk, kind=pure.PATH, name__in=[p[1] for p in paths])
                .values_list("kind", "name", "json_type"))
            fresh = [p for p in paths if p not in stored_paths][:max(room, 0)]
            allowed = stored_paths | set(fresh)
            new = [e for e in new if e[0] != pure.PATH or e in allowed]
    # Sorted, so two writers of the same new rows take their locks in the same order.
    VocabularyEntry.objects.bulk_create(
        [VocabularyEntry(workspace_id=workspace.pk, kind=kind, name=name, json_type=type_)
         for kind, name, type_ in new], ignore_conflicts=True, batch_size=1000)
    transaction.on_commit(lambda: _remember(key, new))
    return len(new)


def rebuild(workspace, chunk: int = 2000) -> int:
    """The workspace's vocabulary collected afresh from every stored event (for workspaces
    loaded before it was kept, or after events were deleted); returns the rows written."""
    found: set = set()
    rows = (Event.objects.filter(workspace=workspace)
            .values_list("input", "output", "data", "labels").iterator(chunk_size=chunk))
    for input_, output, data, labels in rows:
        pure.collect_event(input_, output, data, labels, found)
    with transaction.atomic():
        VocabularyEntry.objects.filter(workspace=workspace).delete()
        forget_stored()
        written = record(workspace, found)
    return written
