"""Waiting for a person without holding a server thread (issue 24, item 3).

An agent polls ``GET .../guard/{id}?wait=S`` for the answer to an ``ask_human`` decision.  The
poll is an async view: while it waits it is a suspended coroutine, not a blocked worker or
thread, so waiting polls cannot starve the site.  Two parts live here:

``DecisionWatch``
    One per event loop (one per server process under uvicorn).  Every waiting poll registers the
    decision it waits for; a single task asks the database every ``POLL_INTERVAL_SECONDS`` which
    of all the watched decisions were answered or are past their deadline (one query, whatever
    the number of waiters) and wakes their polls.  An answer given in the same process wakes its
    polls at once (``notify_settled``).

``claim`` / ``release``
    Caps on the waits a token (``GUARD_WAITS_PER_TOKEN``) and a workspace
    (``GUARD_WAITS_PER_WORKSPACE``) hold at once.  Counted in Django's cache, so that with
    ``CACHE_URL`` (Redis) every process and host counts together.  A wait counts in the time
    window in which it started; the live count is that window's and the previous one's.  A
    window is longer than any wait, so a wait that ended normally took its count back, and a
    request that crashed before it could leaves its count for two windows at most, never for
    ever.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections, connection
from django.db.models import Q
from django.utils import timezone

from .models import DecisionStatus, GuardDecision

logger = logging.getLogger(__name__)

POLL_INTERVAL_SECONDS = 0.25
MAX_WAIT_SECONDS = 30
# Longer than any wait plus the reads around it: a wait started in window w has ended by the end
# of window w + 1, so windows w and w - 1 hold every live wait.
WINDOW_SECONDS = MAX_WAIT_SECONDS + 30
DEFAULT_WAITS_PER_TOKEN = 20
DEFAULT_WAITS_PER_WORKSPACE = 100
DEFAULT_RETRY_AFTER_SECONDS = 5
WATCH_QUERY_CHUNK = 1000


class TooManyWaits(Exception):
    """A cap on waiting polls is reached: answered 429 with Retry-After."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


def waits_per_token() -> int:
    return int(getattr(settings, "GUARD_WAITS_PER_TOKEN", DEFAULT_WAITS_PER_TOKEN))


def waits_per_workspace() -> int:
    return int(getattr(settings, "GUARD_WAITS_PER_WORKSPACE", DEFAULT_WAITS_PER_WORKSPACE))


def retry_after_seconds() -> int:
    return int(getattr(settings, "GUARD_WAIT_RETRY_AFTER_SECONDS", DEFAULT_RETRY_AFTER_SECONDS))


# ---------------------------------------------------------------------------------------------
# Caps


@dataclass
class Lease:
    """The counts one waiting poll holds (cache keys it incremented)."""

    keys: list[str] = field(default_factory=list)


def _window(now: float | None = None) -> int:
    return int((time.time() if now is None else now) // WINDOW_SECONDS)


def _key(scope: str, window: int) -> str:
    return f"guard-waits:{scope}:{window}"


def _incr(key: str) -> int:
    # add() then incr(): both atomic in Redis and in the local-memory cache; the key lives for
    # three windows, past the two in which it is counted.
    cache.add(key, 0, timeout=3 * WINDOW_SECONDS)
    return cache.incr(key)


def _decr(key: str) -> None:
    try:
        cache.decr(key)
    except ValueError:  # expired meanwhile: nothing left to take back
        pass


def claim(workspace_id: int, token_id: int | None) -> Lease:
    """Count one more waiting poll for the token (signed deliveries: ``sig``) and the
    workspace, or raise ``TooManyWaits`` naming the cap.  A cache that fails lets the wait
    through (as the live rate limits do): a wait no longer holds a server thread."""
    window = _window()
    scopes = [(f"w{workspace_id}", waits_per_workspace(), "this workspace",
               "GUARD_WAITS_PER_WORKSPACE")]
    who = f"t{token_id}" if token_id is not None else "sig"
    scopes.insert(0, (f"w{workspace_id}:{who}", waits_per_token(),
                      "this token" if token_id is not None else "signed deliveries",
                      "GUARD_WAITS_PER_TOKEN"))
    lease = Lease()
    try:
        for scope, cap, holder, setting in scopes:
            key = _key(scope, window)
            count = _incr(key)
            lease.keys.append(key)
            count += int(cache.get(_key(scope, window - 1)) or 0)
            if count > cap:
                release(lease)
                raise TooManyWaits(
                    f"{holder} already holds {cap} waiting polls (the most at once, "
                    f"{setting}); retry when one has ended, or poll with wait=0, which never "
                    "waits and is never refused for this", retry_after_seconds())
    except TooManyWaits:
        raise
    except Exception:  # noqa: BLE001 - a broken cache must not stop an agent's poll
        logger.warning("guard wait caps: the cache failed; the wait is let through",
                       exc_info=True)
        release(lease)
        return Lease()
    return lease


def release(lease: Lease) -> None:
    for key in lease.keys:
        try:
            _decr(key)
        except Exception:  # noqa: BLE001 - its count expires with its window
            logger.warning("guard wait caps: could not take back a count", exc_info=True)
    lease.keys.clear()


# ---------------------------------------------------------------------------------------------
# The watch


# The watch's database work: one thread per process, so its connection is reused from one
# round to the next (a round is one query for every decision the process waits for).
_WATCH_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="guard-watch")


def _settled(pks: list[int]) -> set[int]:
    """Which of these decisions no longer wait for a person (answered, or past the deadline
    where the poll applies the policy's default)."""
    close_old_connections()  # what Django does around a request: drop a broken connection
    now = timezone.now()
    found: set[int] = set()
    for start in range(0, len(pks), WATCH_QUERY_CHUNK):
        chunk = pks[start:start + WATCH_QUERY_CHUNK]
        found.update(GuardDecision.objects.filter(pk__in=chunk).filter(
            ~Q(status=DecisionStatus.PENDING) | Q(expires_at__lte=now))
            .values_list("pk", flat=True))
    return found


def _close_watch_connection() -> None:
    connection.close()


class DecisionWatch:
    """The decisions this event loop's polls wait for, and the task that watches them."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.waiters: dict[int, set[asyncio.Future]] = {}
        self.task: asyncio.Task | None = None

    async def wait(self, pk: int, timeout: float) -> bool:
        """Until decision ``pk`` is settled (True) or ``timeout`` seconds passed (False)."""
        future = self.loop.create_future()
        self.waiters.setdefault(pk, set()).add(future)
        if self.task is None or self.task.done():
            self.task = self.loop.create_task(self._watch())
        try:
            await asyncio.wait_for(future, max(timeout, 0))
            return True
        except TimeoutError:
            return False
        finally:
            waiting = self.waiters.get(pk)
            if waiting is not None:
                waiting.discard(future)
                if not waiting:
                    del self.waiters[pk]

    def wake(self, pk: int) -> None:
        for future in self.waiters.get(pk, ()):
            if not future.done():
                future.set_result(None)

    async def _watch(self) -> None:
        try:
            while self.waiters:
                await asyncio.sleep(POLL_INTERVAL_SECONDS)
                pks = list(self.waiters)
                if not pks:
                    break
                try:
                    settled = await self.loop.run_in_executor(_WATCH_THREAD, _settled, pks)
                except Exception:  # noqa: BLE001 - a database blip: the next round tries again
                    logger.warning("guard watch: could not read the decisions", exc_info=True)
                    continue
                for pk in settled:
                    self.wake(pk)
        finally:
            # Idle: give the connection back (a test database can then be dropped, and an idle
            # process holds no connection).
            _WATCH_THREAD.submit(_close_watch_connection)


_WATCHES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, DecisionWatch] = \
    weakref.WeakKeyDictionary()
_WATCHES_LOCK = threading.Lock()


def watch() -> DecisionWatch:
    """This event loop's watch."""
    loop = asyncio.get_running_loop()
    with _WATCHES_LOCK:
        found = _WATCHES.get(loop)
        if found is None:
            found = _WATCHES[loop] = DecisionWatch(loop)
    return found


def notify_settled(pk: int) -> None:
    """A decision was answered in this process: wake its polls here now (polls in other
    processes see it at their watch's next round).  Safe to call from any thread."""
    with _WATCHES_LOCK:
        watches = list(_WATCHES.values())
    for found in watches:
        if pk in found.waiters and not found.loop.is_closed():
            try:
                found.loop.call_soon_threadsafe(found.wake, pk)
            except RuntimeError:  # the loop closed meanwhile
                pass
