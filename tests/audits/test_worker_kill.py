"""RELIABILITY.md 10 on the real services: a Celery worker killed with SIGKILL in the middle of an
audit, and the audit still completes with the results of an undisturbed run and no duplicate rows.

Needs Postgres (the worker processes share the test database pytest-django created; the test
commits its data) and Redis on 127.0.0.1:6379 (database 7, a queue of its own); skipped with the
reason when either is missing.  Run it with
``DATABASE_URL=postgres://postgres@127.0.0.1:5432/studio_audits .venv/bin/python -m pytest
tests/audits/test_worker_kill.py``.

What happens: an undisturbed run of the audit is computed first (tasks in-process); then a real
``celery -A worker worker`` (prefork, two processes) starts, a separate process starts the same
audit as production does (batches enqueued on Redis after commit), and once some batches are done
and others are being run, the worker's whole process group gets SIGKILL.  The batches it held are
left unacknowledged in Redis; a second worker, started after the (test-sized) visibility timeout,
gets them redelivered, alongside the batches never started.  A message the killed worker had
popped but not yet recorded as unacknowledged is lost to Redis; beat's sweeper (running
throughout, test-sized stall time) enqueues such a batch again.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection
from django.test.utils import override_settings
from django.utils import timezone

from studio.audits import services
from studio.audits.models import (
    AuditBatch,
    AuditRun,
    BatchStatus,
    RunStatus,
    SessionResult,
    ViolationRecord,
)
from studio.workspaces.models import AuditLogEntry

from .helpers import RULES, add_rules, copy_sessions, make_team, random_events

REPO = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/7"
VISIBILITY_TIMEOUT = 4  # seconds; production keeps an hour
STALL_SECONDS = 10  # the sweeper's; production waits longer than the task time limit
SESSIONS = 48
EVENTS_PER_SESSION = 2000
BATCH_SIZE = 3  # 16 batches of 6,000 events


def _redis_or_skip():
    try:
        import redis

        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1, socket_timeout=2)
        client.ping()
        return client
    except Exception as exc:  # noqa: BLE001 - any failure means no usable Redis
        pytest.skip(f"needs Redis at {REDIS_URL} for a real Celery worker ({exc})")


def _database_url() -> str:
    s = connection.settings_dict
    auth = quote(s["USER"] or "")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"])
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def stored(run) -> dict:
    violations: dict[int, list] = {}
    for v in (ViolationRecord.objects.filter(result__run=run)
              .order_by("result_id", "detected", "trigger", "id")):
        violations.setdefault(v.result_id, []).append((v.trigger, v.detected, v.at_end,
                                                       v.witness))
    return {(r.session_id, r.rule_version_id): (
        r.steps, r.verdict, r.first_verdict_step, r.final, r.residual, r.violation_count,
        r.timeline, violations.get(r.id, []))
        for r in SessionResult.objects.filter(run=run)}


class Workers:
    """Celery workers started by this test, each in a process group of its own."""

    def __init__(self, env: dict, queue: str, logs: Path):
        self.env, self.queue, self.logs = env, queue, logs
        self.started: list[subprocess.Popen] = []

    def start(self) -> subprocess.Popen:
        n = sum(1 for p in self.logs.glob("worker*.log")) + 1
        return self._spawn(f"worker{n}", ["worker", "-Q", self.queue, "-c", "2", "-l", "info",
                                          "-n", f"{self.queue}-{n}@%h", "--without-gossip",
                                          "--without-mingle", "--without-heartbeat"])

    def start_beat(self) -> subprocess.Popen:
        return self._spawn("beat", ["beat", "-l", "info", "-s", str(self.logs / "schedule")])

    def _spawn(self, name: str, arguments: list[str]) -> subprocess.Popen:
        with open(self.logs / f"{name}.log", "w") as log:  # the child keeps its own copy
            process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "worker", *arguments],
                cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        self.started.append(process)
        return process

    @staticmethod
    def kill(process: subprocess.Popen) -> None:
        """SIGKILL to the worker and its pool processes (its process group)."""
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=30)

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                self.kill(process)

    def output(self, tail: int | None = 4000) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-tail if tail else 0:]}"
                         for p in sorted(self.logs.glob("*.log")))


def _wait(predicate, timeout: float, what: str, workers: Workers, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}\n{workers.output()}")


def _wait_until_no_other_backend_is_active(timeout: float = 10.0) -> None:
    time.sleep(0.3)  # for the server to read what the dead processes had sent
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname ="
                           " current_database() AND pid <> pg_backend_pid() AND state = 'active'")
            if cursor.fetchone()[0] == 0:
                return
            time.sleep(0.01)


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (the prefork pool of a worker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kill", ["worker", "pool"])
def test_a_worker_killed_mid_audit_and_the_audit_still_completes_identically(tmp_path, kill):
    """``worker``: SIGKILL to the whole worker (main process and pool), as when its machine
    dies; a new worker gets the unacknowledged batches back after the visibility timeout.
    ``pool``: SIGKILL to the pool processes running the batches; the surviving main process
    requeues their messages at once (``reject_on_worker_lost``)."""
    if connection.vendor != "postgresql":
        pytest.skip("needs Postgres: worker processes must share the test database "
                    "(DATABASE_URL=postgres://...)")
    redis_client = _redis_or_skip()
    queue = f"audits-test-{uuid.uuid4().hex[:12]}"

    team = make_team("kill")
    add_rules(team, RULES)
    rng = random.Random(10)
    copy_sessions(team, {f"k{i:03d}": random_events(rng, EVENTS_PER_SESSION)
                         for i in range(SESSIONS)})

    # The undisturbed run: same service, tasks in-process.
    with override_settings(AUDIT_BATCH_SIZE=BATCH_SIZE):
        began = time.monotonic()
        undisturbed = services.start_audit(team.workspace, None, None, team.auditor)
        in_process = time.monotonic() - began
    undisturbed.refresh_from_db()
    assert undisturbed.status == RunStatus.DONE
    expected = stored(undisturbed)
    assert len(expected) == SESSIONS * len(RULES)

    env = {**os.environ, "DATABASE_URL": _database_url(), "CELERY_BROKER_URL": REDIS_URL,
           "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
           "AUDIT_BATCH_SIZE": str(BATCH_SIZE), "DJANGO_SETTINGS_MODULE": "studio.settings",
           "PYTHONUNBUFFERED": "1", "CELERY_QUEUE": queue,
           "AUDIT_STALL_SECONDS": str(STALL_SECONDS), "AUDIT_SWEEP_SECONDS": "1"}
    workers = Workers(env, queue, tmp_path)
    try:
        first = workers.start()
        workers.start_beat()
        # Started the way production starts it, in a process with a broker configured.
        script = ("import django\n"
                  "django.setup()\n"
                  "import worker  # noqa: F401 - the Celery app, configured from settings\n"
                  "from studio.audits.services import start_audit\n"
                  "from studio.workspaces.models import Workspace\n"
                  "print(start_audit(Workspace.objects.get(slug='kill')).id)\n")
        producer = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env,
                                  capture_output=True, text=True, timeout=120, check=False)
        assert producer.returncode == 0, producer.stderr
        run = AuditRun.objects.get(pk=int(producer.stdout.split()[-1]))
        assert run.batches_total == SESSIONS // BATCH_SIZE

        def mid_audit():
            # Part-way through, with a batch that started a moment ago: a batch takes a tenth of
            # a second or more, so the kill lands inside it, not as it commits.
            run.refresh_from_db()
            just_started = run.batches.filter(
                status=BatchStatus.RUNNING,
                started_at__gte=timezone.now() - timedelta(milliseconds=40)).exists()
            return 3 <= run.batches_done <= run.batches_total - 4 and just_started

        _wait(mid_audit, 120, "the first worker to be part-way through the audit", workers,
              interval=0.02)
        if kill == "worker":
            workers.kill(first)
            # A COMMIT the dead worker had already sent still completes on the server, so a
            # batch seen running now may turn done a moment later: read once it is quiet.
            _wait_until_no_other_backend_is_active()
        else:
            pool = _children(first.pid)
            assert pool, "the worker has no pool processes"
            for pid in pool:
                os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()
        run.refresh_from_db()
        done_at_kill = run.batches_done
        # With the whole worker dead, what is still "running" is what it was running.  (With
        # the pool killed, the surviving worker may already have started the next batches.)
        interrupted = set(run.batches.filter(status=BatchStatus.RUNNING)
                          .values_list("id", flat=True))
        assert 0 < done_at_kill < run.batches_total and interrupted

        if kill == "worker":
            # Unacknowledged messages come back once older than the visibility timeout; a
            # worker restores them when it starts (and every so often after).
            time.sleep(max(0.0, VISIBILITY_TIMEOUT + 1 - (time.monotonic() - killed_at)))
            workers.start()

        def finished():
            run.refresh_from_db()
            return run.status in (RunStatus.DONE, RunStatus.FAILED)

        _wait(finished, 180, "the audit to finish after the kill", workers, interval=0.2)
    finally:
        workers.stop_all()
        redis_client.delete(queue)

    assert run.status == RunStatus.DONE, (run.error, workers.output())
    got = stored(run)
    assert got == expected  # the same results as the undisturbed run ...
    # ... and no duplicate rows: one result per session and rule, violations once each.
    assert SessionResult.objects.filter(run=run).count() == SESSIONS * len(RULES)
    assert (ViolationRecord.objects.filter(result__run=run).count()
            == ViolationRecord.objects.filter(result__run=undisturbed).count())
    assert (run.batches_done, run.sessions_done) == (run.batches_total, SESSIONS)
    batches = AuditBatch.objects.filter(run=run)
    assert all(b.status == BatchStatus.DONE for b in batches)
    # The batches being run when the kill came were claimed again.
    if kill == "worker":
        assert all(b.attempts >= 2 for b in batches if b.id in interrupted)
    else:
        # The surviving main process requeues at once, so the killed batches may be done again
        # before ``interrupted`` was read (which then holds batches started since): look at all.
        assert any(b.attempts >= 2 for b in batches)
        assert "WorkerLostError" in workers.output(tail=None)
    print(f"\n[{kill}] undisturbed in-process run {in_process:.1f} s; killed at "
          f"{done_at_kill}/{run.batches_total} batches done, {len(interrupted)} running; "
          f"attempts {sorted(b.attempts for b in batches)}; requeued by the sweeper "
          f"{AuditLogEntry.objects.filter(action='audit.requeued', target_id=run.id).count()} "
          "times")
