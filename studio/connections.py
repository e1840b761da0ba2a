"""The one rule for a database connection that failed in a worker (used by uploads and audits).

A worker has no request cycle to drop a broken connection, so the code that caught the error
drops it, and the next query opens a new one.

A lost connection (Postgres restarted, the connection terminated) is not the work's fault: a task
runs it again later, with a growing delay (``retry_delay``) and without spending an attempt,
while the database has been away for less than ``AUDIT_STALL_SECONDS`` (``within_outage``); after
that attempts count again, so work that only looks like it lost its connection still ends.
In-process (eager Celery: no broker to retry through) ``run_until_done`` applies the same rule.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

# What a lost database connection raises.
LOST_CONNECTION = (OperationalError, InterfaceError)

T = TypeVar("T")


def drop_broken_connection() -> None:
    """Close a connection that failed, so the next query opens a new one.  Not inside a
    transaction someone else holds (in-process tasks): that one is theirs to end."""
    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()


def within_outage(lost_since: float | None) -> bool:
    """Whether work whose connection was lost at ``lost_since`` (seconds since the epoch; None:
    it was not) runs again without spending an attempt."""
    return lost_since is not None and time.time() - lost_since < settings.AUDIT_STALL_SECONDS


def retry_delay(retries: int) -> float:
    """The countdown of a task's next retry: growing, jittered, at most two minutes."""
    return min(120, 2 ** (retries + 1)) * random.uniform(0.5, 1.0)


def run_until_done(work: Callable[[bool], T], *, again: tuple[type[BaseException], ...] = (),
                   lost_since: float | None = None) -> T:
    """``work(after_lost_connection)`` in this process, retried as a task would be: after a
    lost connection, following a pause that grows a little each time; after one of ``again``
    (an attempt failed and attempts remain), at once - the work's attempt cap ends it."""
    pauses = 0
    while True:
        try:
            return work(within_outage(lost_since))
        except again:
            lost_since = None
        except LOST_CONNECTION:
            if lost_since is None:  # the outage starts now
                lost_since = time.time()
            time.sleep(min(1.0, 0.01 * 2 ** pauses))
            pauses += 1
