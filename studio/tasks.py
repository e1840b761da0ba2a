"""Background work, enqueued by task name once the transaction commits.

The studio's apps hand work to Celery only through ``enqueue``: they name the task (the names
below) and never import ``worker/``, whose thin tasks import the apps' services in turn.  The
Celery app is made here, so a web process has the configured app without loading any task;
``celery -A worker`` takes this same app (worker/celery.py) and finds the tasks.

With no broker configured (CELERY_TASK_ALWAYS_EAGER: development and tests) a task sent by name
would never run, so there the task is looked up in the app's registry and run in-process, as
``.delay()`` would - in the caller's thread, or, for a task sent with ``background=<delay>``, on a
background thread of this process that runs such tasks one at a time, each ``delay`` seconds
after it was sent (``Background``): the request that sent it answers without waiting for it.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from celery import Celery
from django.db import connections, transaction
from kombu.exceptions import OperationalError as BrokerUnavailable

# Celery's Django support is switched on when the app is made, from this variable.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

log = logging.getLogger(__name__)

app = Celery("studio")
# Every Celery setting lives in Django settings as CELERY_<NAME>, next to what it depends on.
app.config_from_object("django.conf:settings", namespace="CELERY")
# tasks.py of every installed Django app, plus worker/tasks.py where the thin tasks live: named
# here, imported by a worker (or, in eager mode, by the first enqueue), never by the apps.
app.autodiscover_tasks()
app.autodiscover_tasks(["worker"])

# The tasks the apps enqueue, by the names the worker registers them under.
PARSE_UPLOAD = "worker.uploads.parse_upload_task"
REBUILD_VOCABULARY = "worker.uploads.rebuild_vocabulary_task"
RUN_AUDIT_BATCH = "worker.audits.run_audit_batch"
LEARN_RISK_MODEL = "worker.guard.learn_risk_model"
ANTICIPATE_STATE = "worker.live.anticipate_state"
WARM_ANTICIPATION = "worker.live.warm_anticipation"

__all__ = ["BrokerUnavailable", "app", "enqueue", "enqueue_each", "PARSE_UPLOAD",
           "REBUILD_VOCABULARY", "RUN_AUDIT_BATCH", "LEARN_RISK_MODEL"]


def enqueue(name: str, *args, unavailable: Callable[[BrokerUnavailable], None],
            queue: str | None = None, after_commit: bool = True, **options) -> None:
    """Send the task ``name`` with ``args`` once the current transaction commits (at once
    outside one, or with ``after_commit=False``).  ``unavailable`` is called with the error when
    the broker cannot be reached: each caller says what an outage means for its work (the
    sweeper picks it up later, or the request fails).  ``options`` go to Celery
    (``soft_time_limit``, ``time_limit``, ...); ``queue`` overrides settings' routes.
    ``background`` (seconds, or None): without a broker, run the task on the background thread
    that many seconds later rather than in the caller's thread (ignored with a broker)."""
    enqueue_each(name, [args], unavailable=unavailable, queue=queue, after_commit=after_commit,
                 **options)


def enqueue_each(name: str, each_args: Iterable[tuple], *,
                 unavailable: Callable[[BrokerUnavailable], None], queue: str | None = None,
                 after_commit: bool = True, **options) -> None:
    """``enqueue`` for several calls of one task (one tuple of arguments each), in order, after
    one commit; the first broker error ends the sending and goes to ``unavailable``."""
    if queue is not None:
        options["queue"] = queue
    send = Sending(name, [tuple(a) for a in each_args], unavailable, options)
    if after_commit:
        transaction.on_commit(send)
    else:
        send()


@dataclass(frozen=True)
class Sending:
    """The sending of one task's calls (what waits for the commit): ``task_name`` says which."""

    task_name: str
    each_args: list[tuple]
    unavailable: Callable[[BrokerUnavailable], None]
    options: dict

    def __call__(self) -> None:
        try:
            for args in self.each_args:
                _send(self.task_name, args, self.options)
        except BrokerUnavailable as exc:
            self.unavailable(exc)


def _send(name: str, args: tuple, options: dict) -> None:
    options = dict(options)
    delay = options.pop("background", None)
    if app.conf.task_always_eager:
        if delay is not None:
            BACKGROUND.submit(name, args, options, delay)
            return
        _run_here(name, args, options)
    else:
        app.send_task(name, args, **options)


def runs_in_background() -> bool:
    """Whether tasks sent with ``background`` run on this process's background thread (no
    broker) rather than in a worker."""
    return bool(app.conf.task_always_eager)


def _run_here(name: str, args: tuple, options: dict) -> None:
    # send_task bypasses eager mode: run the registered task in-process, as .delay() does.
    if name not in app.tasks:
        app.loader.import_default_modules()  # the worker's task modules, named above
    app.tasks[name].apply_async(args, **options)


class Background:
    """Tasks run without a broker off the request path: one daemon thread per process, started
    with the first task, runs them in the order sent, each once its delay has passed.  A task's
    error is logged (the task stores what it means for its work); the thread's database
    connection is closed after each task."""

    def __init__(self):
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pending: dict[tuple, int] = {}   # (name, args) -> how many sent, not yet run

    def submit(self, name: str, args: tuple, options: dict, delay: float) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="studio-background",
                                                daemon=True)
                self._thread.start()
            key = (name, tuple(args))
            self._pending[key] = self._pending.get(key, 0) + 1
        self._queue.put((time.monotonic() + max(float(delay), 0.0), name, args, options))

    def holds(self, name: str, args: tuple) -> bool:
        """Whether this process was sent the task and has not run it yet (a task sent by a
        process that has since ended is held by none: see ``guard.learning.adopt_orphans``)."""
        with self._lock:
            return (name, tuple(args)) in self._pending

    def _run(self) -> None:
        while True:
            due, name, args, options = self._queue.get()
            try:
                time.sleep(max(due - time.monotonic(), 0.0))
                _run_here(name, args, options)
            except Exception:  # noqa: BLE001 - the thread goes on with the next task
                log.exception("background task %s%r failed", name, args)
            finally:
                connections.close_all()
                with self._lock:
                    key = (name, tuple(args))
                    self._pending[key] -= 1
                    if not self._pending[key]:
                        del self._pending[key]
                self._queue.task_done()

    def idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for every task sent so far to finish (tests, a clean
        shutdown); whether they did."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True


BACKGROUND = Background()
