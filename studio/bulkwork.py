"""Fewer garbage collections during bulk work (plain Python, no Django).

Loading, labelling and monitoring a big log create millions of objects that live until the end
of the batch or the load.  With CPython's default thresholds (a collection every 700 net
allocations, a full one every 100 of those) the collector keeps traversing them, and spends
about a quarter of the monitoring's time doing so (``bench/pipeline.py``'s figures).  The
objects made here hold no reference cycles that need collecting early, so collecting every
50,000 allocations loses no memory worth having and most of that time comes back.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BULK_THRESHOLDS = (50_000, 20, 100)

_lock = threading.Lock()
_active = 0
_saved: tuple[int, ...] | None = None


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect garbage less often inside the block.  The thresholds are process-wide: the first
    block to enter sets them and the last to leave puts the previous ones back, so blocks on
    several threads may overlap."""
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(*BULK_THRESHOLDS)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _saved is not None:
                gc.set_threshold(*_saved)
