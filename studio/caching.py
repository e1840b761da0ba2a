"""The process caches of the studio: a bounded, thread-safe least-recently-used map, and values
kept for a while (``ExpiringValues``).

Every process-wide cache of built things (compiled rule sets, session monitors, loaded models,
verified tokens, labelers' answers) keeps at most ``limit`` entries and forgets the one used
longest ago first.  Reading an entry (``get``) or writing it (``put``) counts as a use.  Pure
Python, no Django: the pure packages use it too.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MISSING = object()


class LruCache(Generic[K, V]):
    """At most ``limit`` entries; the least recently used go first.  Safe to share between
    threads: every operation holds the cache's own lock."""

    def __init__(self, limit: int):
        if limit < 1:
            raise ValueError(f"an LRU cache keeps at least one entry, not {limit}")
        self.limit = limit
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, default: V | None = None) -> V | None:
        """The entry under ``key`` (now the most recently used), or ``default``."""
        with self._lock:
            found = self._entries.get(key, _MISSING)
            if found is _MISSING:
                return default
            self._entries.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` under ``key`` as the most recently used entry."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            self._trim()

    def put_if_absent(self, key: K, value: V) -> V:
        """The entry under ``key`` if there is one, else ``value`` (kept): when two threads
        build the same thing at once, both go on with the first one kept."""
        with self._lock:
            found = self._entries.get(key, _MISSING)
            if found is _MISSING:
                self._entries[key] = found = value
                self._trim()
            else:
                self._entries.move_to_end(key)
            return found

    def pop(self, key: K, default: V | None = None) -> V | None:
        """Take the entry under ``key`` out of the cache (or answer ``default``)."""
        with self._lock:
            return self._entries.pop(key, default)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def keys(self) -> list[K]:
        """The keys, least recently used first."""
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def _trim(self) -> None:
        while len(self._entries) > self.limit:
            self._entries.popitem(last=False)


class ExpiringValues(Generic[K, V]):
    """Values read from elsewhere (the database) and kept for ``ttl`` seconds: ``get`` answers
    the kept value until it expires, then reads it again (``load``).  ``refresh_ahead`` reads it
    again early, when the kept one expires within an eighth of ``ttl``: called after an answer
    has been sent, so that the next request finds it fresh instead of paying the read on its own
    time.  A ``ttl`` of 0 or less keeps nothing.  Safe to share between threads (``load`` runs
    outside the lock).  ``entries`` (key -> (expiry on ``time.monotonic()``, value)) is open for
    tests."""

    def __init__(self):
        self.entries: dict[K, tuple[float, V]] = {}
        self._lock = threading.Lock()

    def get(self, key: K, load: Callable[[], V], ttl: float) -> V:
        if ttl > 0:
            with self._lock:
                kept = self.entries.get(key)
            if kept is not None and kept[0] > time.monotonic():
                return kept[1]
        return self._read(key, load, ttl)

    def refresh_ahead(self, key: K, load: Callable[[], V], ttl: float) -> None:
        if ttl <= 0:
            return
        with self._lock:
            kept = self.entries.get(key)
        if kept is not None and kept[0] - time.monotonic() <= ttl / 8:
            self._read(key, load, ttl)

    def clear(self) -> None:
        with self._lock:
            self.entries.clear()

    def _read(self, key: K, load: Callable[[], V], ttl: float) -> V:
        value = load()
        if ttl > 0:
            with self._lock:
                self.entries[key] = (time.monotonic() + ttl, value)
        return value
