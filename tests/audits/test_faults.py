"""Faults an operator meets: a database connection lost in the middle of an audit batch, an
audit that failed and is resumed, an upload accepted while the broker was down, and 503s that
tell the client when to come back.  Tasks run in-process (no broker)."""

from __future__ import annotations

import time
from datetime import timedelta

import psycopg
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError, connection
from django.test import Client
from django.test.utils import override_settings
from django.utils import timezone

from studio.audits import services
from studio.audits.models import AuditRun, BatchStatus, RunStatus, SessionResult
from studio.traces import intake
from studio.traces.models import Upload, UploadStatus
from studio.workspaces.models import AuditLogEntry
from tests.api.world import Api

from .helpers import RULES, add_rule, add_rules, add_sessions, make_team, random_sessions

pytestmark = pytest.mark.django_db


def _lost_once(monkeypatch, how):
    """compute_batch loses its database connection (``how``) on its first call only."""
    real = services.compute_batch
    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            how()
        return real(*args, **kwargs)

    monkeypatch.setattr(services, "compute_batch", flaky)
    return calls


def _terminated():
    raise OperationalError("consuming input failed: server closed the connection unexpectedly")


# --- a lost database connection does not spend an attempt ------------------------------------

@override_settings(AUDIT_MAX_ATTEMPTS=1)
def test_a_batch_whose_connection_is_lost_is_retried_without_spending_an_attempt(
        team, django_capture_on_commit_callbacks, monkeypatch):
    from worker.audits import run_audit_batch

    add_rule(team, "no_error", "G !error")
    add_sessions(team, {"s": [{"labels": ["error"]}]})
    calls = _lost_once(monkeypatch, _terminated)
    with django_capture_on_commit_callbacks(execute=False):
        run = services.start_audit(team.workspace, None, None, team.auditor)
    batch = run.batches.get()

    # One attempt allowed, and the connection is lost during it: still done.
    assert run_audit_batch.delay(batch.id).get() == "done"

    batch.refresh_from_db()
    run.refresh_from_db()
    assert len(calls) == 2
    assert (batch.status, batch.attempts) == (BatchStatus.DONE, 1)
    assert run.status == RunStatus.DONE and SessionResult.objects.filter(run=run).count() == 1


@pytest.mark.django_db(transaction=True)
@override_settings(AUDIT_MAX_ATTEMPTS=1)
def test_a_connection_postgres_terminates_mid_batch_is_retried_on_a_new_one(monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("terminates a Postgres backend")
    from worker.audits import run_audit_batch

    team = make_team()
    add_rules(team, RULES[:3])
    add_sessions(team, random_sessions(seed=3, count=4, high=6))

    def terminate_own_backend():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    calls = _lost_once(monkeypatch, terminate_own_backend)
    monkeypatch.setattr(services, "_enqueue", lambda run_id, ids: None)
    run = services.start_audit(team.workspace, None, None, team.auditor)
    batch = run.batches.get()

    assert run_audit_batch.delay(batch.id).get() == "done"

    batch.refresh_from_db()
    assert len(calls) == 2 and batch.attempts == 1 and batch.status == BatchStatus.DONE


@pytest.mark.django_db(transaction=True)
@override_settings(AUDIT_MAX_ATTEMPTS=1)
def test_a_connection_lost_during_the_results_copy_is_retried_without_spending_an_attempt(
        monkeypatch):
    # COPY talks to psycopg directly; its lost-connection error must still read as one.
    if connection.vendor != "postgresql":
        pytest.skip("terminates a Postgres backend during COPY")
    from worker.audits import run_audit_batch

    team = make_team()
    add_rules(team, RULES[:3])
    add_sessions(team, random_sessions(seed=5, count=4, high=6))
    real_copy = services.copy_result_texts
    copies = []

    def copy_on_a_dying_connection(*texts):
        copies.append(1)
        if len(copies) == 1:  # killed from outside, so the COPY is what meets the loss
            pid = connection.connection.info.backend_pid
            settings = connection.settings_dict
            with psycopg.connect(host=settings["HOST"] or None, port=settings["PORT"] or None,
                                 user=settings["USER"], dbname=settings["NAME"],
                                 password=settings["PASSWORD"] or None,
                                 autocommit=True) as killer:
                killer.execute("SELECT pg_terminate_backend(%s)", [pid])
        return real_copy(*texts)

    monkeypatch.setattr(services, "copy_result_texts", copy_on_a_dying_connection)
    monkeypatch.setattr(services, "_enqueue", lambda run_id, ids: None)
    run = services.start_audit(team.workspace, None, None, team.auditor)
    batch = run.batches.get()

    assert run_audit_batch.delay(batch.id).get() == "done"

    batch.refresh_from_db()
    assert len(copies) == 2 and batch.attempts == 1 and batch.status == BatchStatus.DONE
    assert SessionResult.objects.filter(batch=batch).count() == 4 * 3


@override_settings(AUDIT_MAX_ATTEMPTS=2, AUDIT_STALL_SECONDS=0.2)
def test_a_connection_lost_for_longer_than_the_stall_period_spends_attempts_again(
        team, django_capture_on_commit_callbacks, monkeypatch):
    from worker.audits import run_audit_batch

    add_rule(team, "no_error", "G !error")
    add_sessions(team, {"s": [{"labels": ["error"]}]})
    calls = []

    def always_lost(*args, **kwargs):
        calls.append(time.monotonic())
        _terminated()

    monkeypatch.setattr(services, "compute_batch", always_lost)
    with django_capture_on_commit_callbacks(execute=False):
        run = services.start_audit(team.workspace, None, None, team.auditor)

    started = time.monotonic()
    assert run_audit_batch.delay(run.batches.get().id).get() == "failed"

    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and "server closed the connection" in run.error
    # Retried for the stall period without counting, then the two attempts were spent.
    assert calls[-1] - started >= 0.2 and len(calls) >= 3


# --- resuming a failed run -------------------------------------------------------------------

@override_settings(AUDIT_MAX_ATTEMPTS=1, AUDIT_BATCH_SIZE=2)
def test_resuming_a_failed_run_reruns_its_failed_batches_until_it_completes(
        team, django_capture_on_commit_callbacks, monkeypatch):
    add_rules(team, RULES[:2])
    add_sessions(team, random_sessions(seed=4, count=5, high=6))
    real = services.compute_batch
    failing = {"on": True}

    def sometimes_broken(session_ids, *args, **kwargs):
        if failing["on"] and len(session_ids) == 2:  # the two full batches fail, the last not
            raise RuntimeError("disk on fire")
        return real(session_ids, *args, **kwargs)

    monkeypatch.setattr(services, "compute_batch", sometimes_broken)
    with django_capture_on_commit_callbacks(execute=True):
        response = Api(user=team.auditor).post("w/acme/audits")
    run = AuditRun.objects.get(pk=response.json()["id"])
    assert run.status == RunStatus.FAILED
    assert run.batches.filter(status=BatchStatus.FAILED).count() == 2

    failing["on"] = False
    with django_capture_on_commit_callbacks(execute=True):
        resumed = Api(user=team.auditor).post(f"w/acme/audits/{run.id}/resume")

    assert resumed.status_code == 200, resumed.content
    assert resumed.json() == {"id": run.id, "enqueued": 2}
    run.refresh_from_db()
    assert (run.status, run.error, run.batches_done, run.sessions_done) == (
        RunStatus.DONE, "", 3, 5)
    assert run.finished_at is not None
    assert SessionResult.objects.filter(run=run).count() == 5 * 2
    entry = AuditLogEntry.objects.get(action="audit.resumed")
    assert entry.details["failed_batches"] == 2
    assert Api(user=team.auditor).post(f"w/acme/audits/{run.id}/resume").status_code == 409


# --- an upload accepted while the broker is down ---------------------------------------------

def _broker_down(*args, **kwargs):
    from kombu.exceptions import OperationalError as BrokerError

    raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")


def test_an_upload_accepted_while_the_broker_was_down_is_parsed_by_the_sweeper(
        team, settings, tmp_path, monkeypatch, django_capture_on_commit_callbacks):
    from worker.audits import requeue_stalled_work
    from worker.uploads import parse_upload_task

    settings.UPLOAD_ROOT = tmp_path
    monkeypatch.setattr(parse_upload_task, "apply_async", _broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        upload, created = intake.create_upload(
            team.workspace, SimpleUploadedFile("log.jsonl", b'{"session": "s", "output": "x"}\n'),
            "jsonl", by=team.auditor)
    upload.refresh_from_db()
    assert created and upload.status == UploadStatus.RECEIVED and upload.started_at is None
    monkeypatch.undo()  # the broker is back

    # Within a minute the parse may still be on its way: left alone.
    assert requeue_stalled_work.delay().get()["uploads"] == []
    Upload.objects.filter(pk=upload.pk).update(created_at=timezone.now() - timedelta(seconds=70))
    assert requeue_stalled_work.delay().get()["uploads"] == [upload.pk]

    upload.refresh_from_db()
    assert upload.status == UploadStatus.PARSED and upload.events_stored == 1


# --- every 503 says when to come back ---------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_starting_an_audit_without_a_task_queue_is_a_503_with_retry_after(monkeypatch):
    from worker.audits import run_audit_batch

    team = make_team()
    add_rule(team, "no_error", "G !error")
    add_sessions(team, {"s": [{"labels": ["error"]}]})
    monkeypatch.setattr(run_audit_batch, "apply_async", _broker_down)
    response = Api(user=team.auditor).post("w/acme/audits")
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0


def test_an_upload_page_that_cannot_store_the_file_is_a_503_with_retry_after(
        team, settings, tmp_path, monkeypatch):
    settings.UPLOAD_ROOT = tmp_path

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(intake, "create_upload", disk_full)
    client = Client()
    client.force_login(team.auditor)
    response = client.post("/w/acme/uploads/", {
        "file": SimpleUploadedFile("log.jsonl", b'{"session": "s"}\n'), "format": "jsonl"})
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
