"""A worker that outlives its broker (issue 24, item 2): Redis restarted five times while uploads
parse and live deliveries arrive, and afterwards every upload is parsed, every delivered event
is stored exactly once, and the same worker and beat processes are still running.

Everything is real and started here, as docker-compose starts it: a redis-server of the test's
own on a free port, a ``celery -A worker worker`` (prefork, two processes, gossip, mingle and
heartbeat on, as in production), ``celery -A worker beat`` and ``manage.py runserver``; uploads
and deliveries go over HTTP.  Redis restarts with ``SHUTDOWN NOSAVE`` and no persistence: the
worst case, in which every queued and unacknowledged task vanishes with it.  What the broker
loses, beat's sweeper enqueues again (test-sized ``AUDIT_STALL_SECONDS``); what the worker was
running when the broker went, it finishes.  Live deliveries do not go through the broker, but
their rate limits are counted in the same Redis (``CACHE_URL``), which must not cost an event.

Before the fix (celery 5.7.0) the worker died on the first or second restart with
``Unrecoverable error: AttributeError("'NoneType' object has no attribute 'hostname'")``.

Needs Postgres (the servers share the test database) and the ``redis-server`` program; skipped
without them, failed under ``CI=true``.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
import redis
import requests
from django.db import connection
from django.db.models import Count

from studio.traces.models import Event, TraceSession, Upload, UploadStatus
from studio.workspaces import services as workspaces
from studio.workspaces.models import Role

REPO = Path(__file__).resolve().parent.parent
RESTARTS = 5
BROKER_DOWN_SECONDS = 0.5  # between SHUTDOWN and the new server taking connections
UPLOADS = 6
LINES_PER_UPLOAD = 3000
LIVE_SESSIONS = 4
EVENTS_PER_DELIVERY = 5
STALL_SECONDS = 8  # the sweeper's, so a task Redis lost is enqueued again within the test


def _unavailable(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _database_url() -> str:
    s = connection.settings_dict
    auth = quote(s["USER"] or "")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"])
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def _wait(predicate, timeout: float, what: str, logs, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}\n{logs()}")


class Broker:
    """A redis-server of the test's own, in the foreground of a child process, without
    persistence: a restart loses every key, as a crash of an unpersisted Redis does."""

    def __init__(self, program: str, folder: Path):
        self.program, self.folder, self.port = program, folder, _free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.restarts = 0

    def start(self) -> None:
        with open(self.folder / f"redis{self.restarts}.log", "w") as log:
            self.process = subprocess.Popen(
                [self.program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(self.folder),
                 "--maxmemory-policy", "noeviction"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"redis-server did not start on port {self.port}")
                time.sleep(0.02)

    def restart(self) -> None:
        # A bare socket: redis-py would retry the command whose connection the server closes.
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as control:
            control.sendall(b"SHUTDOWN NOSAVE\r\n")
            control.recv(100)  # the server closes the connection as it goes
        self.process.wait(timeout=10)
        time.sleep(BROKER_DOWN_SECONDS)
        self.restarts += 1
        self.start()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


class Services:
    """The studio's processes, each in a process group of its own, logging to a file."""

    def __init__(self, env: dict, logs: Path):
        self.env, self.logs = env, logs
        self.started: dict[str, subprocess.Popen] = {}

    def start(self, name: str, arguments: list[str]) -> subprocess.Popen:
        with open(self.logs / f"{name}.log", "w") as log:
            process = subprocess.Popen([sys.executable, *arguments], cwd=REPO, env=self.env,
                                       stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        self.started[name] = process
        return process

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def output(self, tail: int = 3000) -> str:
        return "\n".join(f"--- {name}\n{self.log(name)[-tail:]}" for name in self.started)

    def stop_all(self) -> None:
        for process in self.started.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.started.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


class Deliveries(threading.Thread):
    """An agent posting live events without pause, each with an id of its own; a delivery that
    fails in any way (refused connection, 5xx, 429) is sent again, unchanged, until it is
    accepted - so an event stored twice would be the server's doing."""

    def __init__(self, base: str, token: str):
        super().__init__(daemon=True)
        self.base, self.token = base, token
        self.stop = threading.Event()
        self.sent: list[str] = []
        self.retries = 0
        self.failure: str | None = None

    def run(self) -> None:
        http = requests.Session()
        http.headers["Authorization"] = f"Bearer {self.token}"
        numbers = itertools.count()
        try:
            while not self.stop.is_set():
                session = f"live-{len(self.sent) // EVENTS_PER_DELIVERY % LIVE_SESSIONS}"
                events = [{"event_id": f"ev-{next(numbers)}",
                           "output": {"tool": "lookup", "args": {"n": len(self.sent) + k}}}
                          for k in range(EVENTS_PER_DELIVERY)]
                self._deliver(http, session, events)
                self.sent.extend(e["event_id"] for e in events)
        except Exception as exc:  # noqa: BLE001 - reported by the test, not lost in a thread
            self.failure = f"{type(exc).__name__}: {exc}"

    def _deliver(self, http: requests.Session, session: str, events: list) -> None:
        url = f"{self.base}/api/w/restarts/live/sessions/{session}/events"
        body = json.dumps({"events": events})
        deadline = time.monotonic() + 30
        while True:
            try:
                response = http.post(url, data=body, timeout=10,
                                     headers={"Content-Type": "application/json"})
                if response.status_code == 200:
                    return
                if response.status_code < 500 and response.status_code != 429:
                    raise AssertionError(f"delivery refused: {response.status_code} "
                                         f"{response.text[:500]}")
            except requests.ConnectionError:
                pass
            self.retries += 1
            if time.monotonic() > deadline:
                raise AssertionError(f"a delivery to {session} was not accepted in 30 s")
            time.sleep(0.1)


def _upload_file(number: int) -> bytes:
    lines = (json.dumps({"session": f"u{number}-s{i % 20}", "step": i // 20,
                         "input": f"request {i} of upload {number}",
                         "output": {"tool": "search", "args": {"q": f"item {i}"}}})
             for i in range(LINES_PER_UPLOAD))
    return ("\n".join(lines) + "\n").encode()


def _upload(base: str, token: str, number: int) -> int:
    response = requests.post(f"{base}/api/w/restarts/uploads", timeout=60,
                             headers={"Authorization": f"Bearer {token}"},
                             files={"file": (f"log{number}.jsonl", _upload_file(number))},
                             data={"format": "jsonl"})
    assert response.status_code in (201, 202), response.text[:1000]
    return response.json()["id"]


@pytest.mark.django_db(transaction=True)
def test_the_worker_outlives_five_broker_restarts_and_nothing_is_lost(tmp_path):
    if connection.vendor != "postgresql":
        _unavailable("needs Postgres: the worker and server share the test database "
                     "(DATABASE_URL=postgres://...)")
    program = shutil.which("redis-server")
    if program is None:
        _unavailable("needs the redis-server program, to restart a Redis of the test's own")

    owner = workspaces.create_user("owner-restarts")
    workspace = workspaces.create_workspace("Restarts", owner=owner, slug="restarts")
    _, token = workspaces.create_token(workspace, "agent", [Role.AUDITOR], owner)

    broker = Broker(program, tmp_path)
    broker.start()
    web_port = _free_port()
    base = f"http://127.0.0.1:{web_port}"
    env = {**os.environ, "DATABASE_URL": _database_url(),
           "CELERY_BROKER_URL": f"{broker.url}/0", "CACHE_URL": f"{broker.url}/1",
           "CELERY_QUEUE": f"restarts-{uuid.uuid4().hex[:8]}",
           "UPLOAD_ROOT": str(tmp_path / "uploads"), "DJANGO_SETTINGS_MODULE": "studio.settings",
           "AUDIT_STALL_SECONDS": str(STALL_SECONDS), "AUDIT_SWEEP_SECONDS": "1",
           "PYTHONUNBUFFERED": "1"}
    services = Services(env, tmp_path)
    deliveries = Deliveries(base, token)
    try:
        worker = services.start("worker", ["-m", "celery", "-A", "worker", "worker", "-l", "info",
                                           "--concurrency", "2", "-n", "restarts@%h"])
        beat = services.start("beat", ["-m", "celery", "-A", "worker", "beat", "-l", "info",
                                       "-s", str(tmp_path / "schedule")])
        services.start("web", ["manage.py", "runserver", "--noreload", "--skip-checks",
                               f"127.0.0.1:{web_port}"])

        def web_answers() -> bool:
            try:
                return requests.get(f"{base}/healthz", timeout=5).status_code == 200
            except requests.RequestException:  # not listening yet, or still loading
                return False

        _wait(web_answers, 60, "the web server", services.output)
        _wait(lambda: " ready." in services.log("worker"), 60, "the worker", services.output)

        def worker_connected() -> bool:
            if worker.poll() is not None:
                pytest.fail(f"the worker exited (status {worker.returncode}) after "
                            f"{broker.restarts} broker restarts\n{services.log('worker')[-6000:]}")
            # Once on starting and once more for each restart it survived.
            return services.log("worker").count("Connected to redis://") > broker.restarts

        deliveries.start()
        uploads = []
        # Each time the worker is connected again: an upload, and a restart while it parses.
        for number in range(UPLOADS):
            _wait(worker_connected, 60, "the worker to connect to the broker again",
                  services.output)
            uploads.append(_upload(base, token, number))
            if broker.restarts < RESTARTS:
                # The restart lands while the worker holds the parse, unacknowledged.
                _wait(lambda: Upload.objects.filter(pk=uploads[-1]).exclude(
                          status=UploadStatus.RECEIVED).exists(),
                      30, f"upload {uploads[-1]} to start parsing", services.output, 0.01)
                broker.restart()
        time.sleep(1.0)  # deliveries go on a moment after the last restart
        deliveries.stop.set()
        deliveries.join(timeout=60)
        assert deliveries.failure is None, f"{deliveries.failure}\n{services.output()}"

        def all_parsed() -> bool:
            return (Upload.objects.filter(pk__in=uploads, status=UploadStatus.PARSED).count()
                    == len(uploads))

        _wait(all_parsed, 60, "every upload to be parsed", services.output, interval=0.5)
        worker_alive, beat_alive = worker.poll() is None, beat.poll() is None
        worker_log = services.log("worker")
    finally:
        deliveries.stop.set()
        services.stop_all()
        broker.stop()

    assert broker.restarts == RESTARTS
    # The same processes lived through every restart: nothing had to start them again.
    assert worker_alive and beat_alive, services.output()
    assert "Unrecoverable error" not in worker_log, worker_log[-5000:]

    # Every upload parsed, each line stored once.
    for upload in Upload.objects.filter(pk__in=uploads):
        assert (upload.lines_total, upload.lines_bad, upload.events_stored) == (
            LINES_PER_UPLOAD, 0, LINES_PER_UPLOAD), (upload.pk, upload.error)
        events = Event.objects.filter(upload=upload)
        assert events.count() == LINES_PER_UPLOAD
        assert events.values("session_id", "step").distinct().count() == LINES_PER_UPLOAD

    # Every delivered event stored exactly once.
    live = Event.objects.filter(session__workspace=workspace, session__source="live")
    stored = list(live.values_list("event_id", flat=True))
    assert len(stored) == len(deliveries.sent) and set(stored) == set(deliveries.sent)
    assert deliveries.sent, "no delivery was made"
    per_session = dict(TraceSession.objects.filter(workspace=workspace, source="live")
                       .annotate(n=Count("events")).values_list("external_id", "n"))
    assert sum(per_session.values()) == len(deliveries.sent)
    print(f"\n{len(uploads)} uploads of {LINES_PER_UPLOAD} lines parsed; "
          f"{len(deliveries.sent)} live events delivered ({deliveries.retries} deliveries "
          f"sent again) across {RESTARTS} broker restarts")
