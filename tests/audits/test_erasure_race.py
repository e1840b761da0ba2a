"""An erasure racing an audit (issue 24, item 1): two uploads of the same sessions (steps 0-9
in the first, 10-19 in the second), an audit of the second, and the first erased while the audit
runs.  Whatever the order, no stored result may read an erased event: the results of the raced
run equal those of an audit run after the erasure, and what the run's report says about the
erasure is what happened.

The orders are made to happen, not hoped for: the erasure commits between a batch's read and
its write (in-process, and across connections), the erasure is under way when the batch writes
(it waits, then computes again), and the batch is writing when the erasure starts (the erasure
waits, then removes what it wrote).  A real Celery worker runs the race at its own pace last.

Needs Postgres for the cross-connection orders and the worker (advisory locks; the worker shares
the test database) and Redis for the worker (database 9); skipped without them, failed under
``CI=true``.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
import uuid
from unittest import mock

import pytest
from django.db import close_old_connections, connection
from django.test.utils import override_settings

from studio.audits import services
from studio.audits.erasure import AuditErasure
from studio.audits.models import AuditRun, RunStatus, SessionResult
from studio.traces import erasure
from studio.traces.models import Event, TraceSession, Upload

from .helpers import RULES, add_rules, make_team, make_upload, random_events
from .test_worker_kill import REPO, Workers, _database_url, stored

SESSIONS = 200
HALF = 10  # steps per upload and session
REDIS_URL = "redis://127.0.0.1:6379/9"


def _missing(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI: {reason}")
    pytest.skip(reason)


def _postgres_or_skip():
    if connection.vendor != "postgresql":
        _missing("needs Postgres: the erasure lock is an advisory lock, and other connections "
                 "must see the test's data (DATABASE_URL=postgres://...)")


def two_uploads(team, sessions: int = SESSIONS, seed: int = 24) -> tuple[Upload, Upload]:
    """``sessions`` sessions, steps 0..HALF-1 brought by the first upload and HALF..2*HALF-1
    by the second."""
    rng = random.Random(seed)
    first, second = make_upload(team, "first.jsonl"), make_upload(team, "second.jsonl")
    made = TraceSession.objects.bulk_create(
        [TraceSession(workspace=team.workspace, external_id=f"r{i:04d}", steps=2 * HALF)
         for i in range(sessions)])
    rows = []
    for session in made:
        for step, event in enumerate(random_events(rng, 2 * HALF)):
            rows.append(Event(workspace=team.workspace, session=session,
                              upload=first if step < HALF else second, step=step,
                              input=event["input"], output=event["output"],
                              data=event["data"], labels=event["labels"]))
    Event.objects.bulk_create(rows, batch_size=5000)
    return first, second


def planned_run(team, upload: Upload) -> AuditRun:
    """The audit of ``upload`` with its batches planned, none enqueued (the tests run them)."""
    with override_settings(AUDIT_BATCH_SIZE=50), \
            mock.patch.object(services, "_enqueue", lambda run_id, batch_ids: None):
        return services.create_run(team.workspace, None, upload,
                                   services.approved_versions(team.workspace), [], team.auditor,
                                   services.upload_scope(upload))


def run_all(run: AuditRun) -> list[str]:
    return [services.run_batch(b) for b in run.batches.order_by("index")
            .values_list("id", flat=True)]


def audit_after_erasure(team, upload: Upload) -> dict:
    fresh = planned_run(team, upload)
    run_all(fresh)
    fresh.refresh_from_db()
    assert fresh.status == RunStatus.DONE
    return {key: value for key, value in stored(fresh).items()}


def assert_no_result_reads_erased_events(run: AuditRun) -> None:
    steps = dict(TraceSession.objects.values_list("id", "steps"))
    wrong = [(r.session_id, r.steps) for r in SessionResult.objects.filter(run=run)
             if r.steps != steps[r.session_id]]
    assert wrong == [], f"{len(wrong)} results cover steps that no longer exist"
    assert steps and set(steps.values()) == {HALF}


@pytest.fixture
def team():
    team = make_team("race")
    add_rules(team, RULES)
    return team


@pytest.mark.django_db
def test_an_erasure_between_a_batchs_read_and_write_makes_it_compute_again(team, monkeypatch):
    first, second = two_uploads(team)
    run = planned_run(team, second)
    assert run.batches_total == SESSIONS // 50
    computed = services.compute_batch
    calls = []

    def compute_then_erase(*args, **kwargs):
        results = computed(*args, **kwargs)
        calls.append(len(args[0]))
        if len(calls) == 1:  # the first batch has read its events: now the erasure
            erasure.erase_upload(Upload.objects.get(pk=first.pk), by=team.auditor)
        return results

    monkeypatch.setattr(services, "compute_batch", compute_then_erase)
    assert run_all(run) == ["done"] * 4
    assert len(calls) == 5  # the raced batch computed twice, the others once
    monkeypatch.setattr(services, "compute_batch", computed)

    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert_no_result_reads_erased_events(run)
    assert stored(run) == audit_after_erasure(team, second)
    # The report says what happened: no stored result had read the erased events, and the
    # batch computing meanwhile was computed again.
    [entry] = run.erasures
    assert (entry["results"], entry["recomputed_batches"]) == (0, 1)
    [notice] = run.erasure_notices()
    assert ("none of this run's results had been computed from it; 1 batch of this run "
            "computing while it was erased was computed again without its events") in notice


@pytest.mark.django_db
def test_results_stored_before_an_erasure_go_and_the_report_counts_them(team, monkeypatch):
    first, second = two_uploads(team)
    run = planned_run(team, second)
    computed = services.compute_batch
    calls = []

    def compute_then_erase(*args, **kwargs):
        results = computed(*args, **kwargs)
        calls.append(len(args[0]))
        if len(calls) == 3:  # two batches stored, the third has read its events
            erasure.erase_upload(Upload.objects.get(pk=first.pk), by=team.auditor)
        return results

    monkeypatch.setattr(services, "compute_batch", compute_then_erase)
    assert run_all(run) == ["done"] * 4
    monkeypatch.setattr(services, "compute_batch", computed)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert_no_result_reads_erased_events(run)
    raced, after = stored(run), audit_after_erasure(team, second)
    assert raced.items() <= after.items()  # what is left is what an audit after computes
    assert len(after) - len(raced) == 100 * len(RULES)
    [entry] = run.erasures
    assert (entry["results"], entry["recomputed_batches"]) == (100 * len(RULES), 1)
    assert f"{100 * len(RULES):,} results of this run computed from it were removed" in (
        run.erasure_notices()[0])


# ---------------------------------------------------------------------------------------------
# Across connections: the lock decides the order

def _waiting_for_the_erasure_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                       "AND classid = %s AND NOT granted", [erasure._LOCK_SPACE])
        return cursor.fetchone()[0] > 0


def _wait_for(predicate, what: str, timeout: float = 30.0, seen=None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    pytest.fail(f"timed out waiting for {what}" + (f"; {seen()}" if seen else ""))


class InThread(threading.Thread):
    """``target`` in a thread of its own (its own database connection); errors re-raised."""

    def __init__(self, target):
        super().__init__(daemon=True)
        self.target, self.error = target, None

    def run(self):
        try:
            self.target()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc
        finally:
            close_old_connections()
            connection.close()

    def finish(self, timeout: float = 60.0):
        self.join(timeout)
        assert not self.is_alive(), "the thread did not finish"
        if self.error is not None:
            raise self.error


@pytest.mark.django_db(transaction=True)
def test_an_erasure_under_way_when_a_batch_writes_makes_the_batch_wait_and_compute_again(
        team, monkeypatch):
    _postgres_or_skip()
    first, second = two_uploads(team, sessions=50)
    run = planned_run(team, second)
    [batch] = run.batches.all()
    midway, go_on = threading.Event(), threading.Event()
    erase_results = AuditErasure.erase

    def erase_slowly(self, scope):  # the erasure holds its lock and has deleted results
        removed = erase_results(self, scope)
        midway.set()
        assert go_on.wait(30)
        return removed

    monkeypatch.setattr(AuditErasure, "erase", erase_slowly)
    computed = services.compute_batch
    eraser = None

    def compute_with_an_erasure_under_way(*args, **kwargs):
        nonlocal eraser
        results = computed(*args, **kwargs)
        if eraser is None:
            eraser = InThread(lambda: erasure.erase_upload(first, by=team.auditor))
            eraser.start()
            assert midway.wait(30)
            # Let the erasure go on once this batch waits for it at its write.
            InThread(lambda: (_wait_for(_waiting_for_the_erasure_lock, "the batch to wait"),
                              go_on.set())).start()
        return results

    monkeypatch.setattr(services, "compute_batch", compute_with_an_erasure_under_way)
    assert services.run_batch(batch.id) == "done"
    eraser.finish()
    monkeypatch.undo()
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert_no_result_reads_erased_events(run)
    assert stored(run) == audit_after_erasure(team, second)
    [entry] = run.erasures
    assert (entry["results"], entry["recomputed_batches"]) == (0, 1)


@pytest.mark.django_db(transaction=True)
def test_an_erasure_waits_for_a_batch_writing_and_removes_what_it_wrote(team, monkeypatch):
    _postgres_or_skip()
    first, second = two_uploads(team, sessions=50)
    run = planned_run(team, second)
    [batch] = run.batches.all()
    inserted = services.insert_results
    eraser = None

    def insert_while_an_erasure_starts(*args, **kwargs):
        nonlocal eraser
        eraser = InThread(lambda: erasure.erase_upload(first, by=team.auditor))
        eraser.start()
        _wait_for(_waiting_for_the_erasure_lock, "the erasure to wait for the batch")
        return inserted(*args, **kwargs)

    monkeypatch.setattr(services, "insert_results", insert_while_an_erasure_starts)
    assert services.run_batch(batch.id) == "done"
    eraser.finish()
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert SessionResult.objects.filter(run=run).count() == 0
    [entry] = run.erasures
    assert (entry["results"], entry.get("recomputed_batches", 0)) == (50 * len(RULES), 0)
    assert "results of this run computed from it were removed" in run.erasure_notices()[0]


# ---------------------------------------------------------------------------------------------
# A real worker

def _redis_or_skip():
    try:
        import redis

        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1, socket_timeout=2)
        client.ping()
        return client
    except Exception as exc:  # noqa: BLE001 - any failure means no usable Redis
        _missing(f"needs Redis at {REDIS_URL} for a real Celery worker ({exc})")


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_racing_an_erasure_keeps_no_result_of_erased_events(team, tmp_path):
    _postgres_or_skip()
    redis_client = _redis_or_skip()
    queue = f"erasure-race-{uuid.uuid4().hex[:12]}"
    first, second = two_uploads(team, sessions=SESSIONS, seed=7)
    env = {**os.environ, "DATABASE_URL": _database_url(), "CELERY_BROKER_URL": REDIS_URL,
           "AUDIT_BATCH_SIZE": "5", "DJANGO_SETTINGS_MODULE": "studio.settings",
           "PYTHONUNBUFFERED": "1", "CELERY_QUEUE": queue}
    workers = Workers(env, queue, tmp_path)
    try:
        script = ("import django\n"
                  "django.setup()\n"
                  "import worker  # noqa: F401 - the Celery app, configured from settings\n"
                  "from studio.audits.services import start_audit\n"
                  "from studio.traces.models import Upload\n"
                  f"upload = Upload.objects.get(pk={second.pk})\n"
                  "print(start_audit(upload.workspace, None, upload).id)\n")
        producer = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env,
                                  capture_output=True, text=True, timeout=120, check=False)
        assert producer.returncode == 0, producer.stderr
        run = AuditRun.objects.get(pk=int(producer.stdout.split()[-1]))
        assert run.batches_total == SESSIONS // 5
        # The worker starts once the batches wait in the queue and the watch below is running:
        # started first, it could finish the whole audit while the producer process was still
        # exiting on a loaded machine, and the moment to erase would never be seen.
        workers.start()

        def part_way():
            run.refresh_from_db()
            return 2 <= run.batches_done <= run.batches_total - 10

        _wait_for(part_way, "the worker to be part-way through the audit", timeout=120,
                  seen=lambda: (f"run {run.status}, {run.batches_done} of {run.batches_total} "
                                f"batches; workers said: {workers.output()}"))
        erased = erasure.erase_upload(Upload.objects.get(pk=first.pk), by=team.auditor)

        def finished():
            run.refresh_from_db()
            return run.status in (RunStatus.DONE, RunStatus.FAILED)

        _wait_for(finished, "the audit to finish", timeout=180)
    finally:
        workers.stop_all()
        redis_client.delete(queue)
    assert run.status == RunStatus.DONE, (run.error, workers.output())
    assert_no_result_reads_erased_events(run)
    raced = stored(run)
    # Sessions whose results were stored before the erasure lost them (and say so); every
    # other one holds what an audit after the erasure computes.
    after = audit_after_erasure(team, second)
    assert raced.items() <= after.items()
    [entry] = run.erasures
    assert entry["results"] == erased.results == len(after) - len(raced)
    assert entry["results"] > 0
    print(f"\nerased at {entry['results'] // len(RULES)} of {SESSIONS} sessions audited; "
          f"{entry.get('recomputed_batches', 0)} batches computed again")
