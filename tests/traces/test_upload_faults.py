"""Uploads under faults: database connections terminated while a log loads (Postgres, as in
issue 24), connections lost at chosen moments (before and after a batch's commit), an outage
that outlasts the retries, and failed uploads resumed by API, by the page's button and by
uploading the same file again.  Each ends with every line of the file stored exactly once.

The terminating test needs Postgres: skipped on SQLite, a failure under CI=true.
"""

from __future__ import annotations

import json
import logging
import os
import random

import pytest
from django.db import OperationalError, connection
from django.db.models import Count

from bench.upload_faults import ConnectionKiller, conninfo_of
from studio.traces import intake, loading
from studio.traces.models import Event, TraceSession, Upload, UploadError
from studio.workspaces.models import AuditLogEntry

pytestmark = pytest.mark.django_db


def _postgres_or_skip() -> None:
    if connection.vendor != "postgresql":
        if os.environ.get("CI") == "true":
            pytest.fail("terminating connections needs Postgres, which CI provides")
        pytest.skip("terminates Postgres backends")


def log_lines(count: int, sessions: int, seed: int, broken_every: int = 0) -> list[str]:
    """A log of ``count`` lines over ``sessions`` sessions: every other session numbers its
    steps (shuffled within the session), the rest leave the numbering to the loader; each
    input names its line.  Every ``broken_every``-th line is not JSON."""
    rng = random.Random(seed)
    owners = [None if broken_every and number % broken_every == 0 else rng.randrange(sessions)
              for number in range(1, count + 1)]
    explicit_steps: dict[int, list[int]] = {}
    for session in set(owners) - {None}:
        if session % 2 == 0:
            steps = list(range(owners.count(session)))
            rng.shuffle(steps)
            explicit_steps[session] = steps
    lines = []
    for number, session in enumerate(owners, start=1):
        if session is None:
            lines.append(f"not json {number}")
            continue
        row = {"session": f"s{session}", "input": f"line {number}",
               "output": {"tool": rng.choice(["send", "read", "pay"]), "n": number}}
        if session in explicit_steps:
            row["step"] = explicit_steps[session].pop()
        lines.append(json.dumps(row))
    return lines


def expected_sessions(lines: list[str]) -> dict[str, list[str]]:
    """The oracle: each session's inputs in step order, read off the file without the loader
    (explicit steps sorted; numbered ones in file order)."""
    by_session: dict[str, list[tuple[int, int, str]]] = {}
    for number, text in enumerate(lines, start=1):
        if text.startswith("not json"):
            continue
        row = json.loads(text)
        by_session.setdefault(row["session"], []).append(
            (row.get("step", number), number, row["input"]))
    return {name: [entry[2] for entry in sorted(rows)] for name, rows in by_session.items()}


def assert_every_line_once(upload: Upload, lines: list[str]) -> None:
    bad = sum(1 for text in lines if text.startswith("not json"))
    good = len(lines) - bad
    assert (upload.status, upload.lines_total, upload.lines_ok, upload.lines_bad,
            upload.events_stored) == ("parsed", len(lines), good, bad, good), upload.error
    assert upload.bytes_read == upload.size and upload.percent == 100.0
    events = Event.objects.filter(upload=upload)
    assert events.count() == good
    assert events.values("input").distinct().count() == good  # no line twice
    assert not (events.values("session_id", "step").annotate(n=Count("id")).filter(n__gt=1)
                .exists())
    assert sorted(UploadError.objects.filter(upload=upload).values_list("line", flat=True)) == [
        number for number, text in enumerate(lines, start=1) if text.startswith("not json")]
    stored = {}
    for session in TraceSession.objects.filter(workspace=upload.workspace):
        steps_inputs = list(session.events.order_by("step").values_list("step", "input"))
        assert [step for step, _ in steps_inputs] == list(range(session.steps))
        stored[session.external_id] = [json.loads(text) if text.startswith('"') else text
                                       for _, text in steps_inputs]
    assert stored == expected_sessions(lines)


def _upload_without_parsing(auditor, lines: list[str]) -> Upload:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(intake, "enqueue_parse", lambda upload_id: None)
        response = auditor.upload("".join(text + "\n" for text in lines).encode(), "jsonl")
    assert response.status_code == 201, response.content
    upload = Upload.objects.get(pk=response.json()["id"])
    assert upload.status == "received"
    return upload


# --- connections terminated while a log loads ---------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_terminating_the_loaders_connections_again_and_again_stores_every_line_once(
        auditor, monkeypatch, settings, caplog):
    """Issue 24: every connection to the database terminated every 0.2-1 s while a 20,000-line
    log loads (parsed in a child process, written on the writer thread).  The first strike comes
    at 0.1 s, inside the load even on an idle machine (a first wait of 0.77 s let a quick load
    finish unstruck; strikes closer together than a batch takes would never let it finish)."""
    _postgres_or_skip()
    from worker.uploads import parse_upload_task

    settings.PARSE_PROCESS_MIN_BYTES = 0
    settings.UPLOAD_MAX_ATTEMPTS = 1  # a lost connection must not spend one
    monkeypatch.setattr(loading, "BATCH_EVENTS", 4_000)  # more commits to hit
    lines = log_lines(20_000, sessions=300, seed=24, broken_every=997)
    upload = _upload_without_parsing(auditor, lines)

    caplog.set_level(logging.WARNING, logger="studio.traces.loading")
    killer = ConnectionKiller(conninfo_of(connection.settings_dict),
                              connection.settings_dict["NAME"], 0.2, 1.0, first=0.1)
    with killer:
        assert parse_upload_task.apply(args=[upload.pk]).get() == "parsed"
    connection.close()  # the killer may have ended it last

    assert killer.failure is None and killer.rounds > 0 and killer.kills > 0
    assert any("connection was lost" in r.getMessage() for r in caplog.records)
    upload.refresh_from_db()
    assert upload.attempts == 1
    assert_every_line_once(upload, lines)


# --- a connection lost at a chosen moment ---------------------------------------------------------

def _terminated():
    raise OperationalError("consuming input failed: server closed the connection unexpectedly")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("when", ["before the commit", "after the commit"])
def test_a_batch_whose_connection_is_lost_is_written_again_once_in_halves(
        auditor, monkeypatch, settings, when):
    """The second and third writes lose their connection: before their commit (nothing
    stored: the batch is written again in halves, the first half in quarters) or after it
    (stored unseen: skipped, not stored twice)."""
    settings.UPLOAD_MAX_ATTEMPTS = 1
    monkeypatch.setattr(loading, "BATCH_EVENTS", 200)
    monkeypatch.setattr(loading, "FIRST_BATCH_EVENTS", 200)
    monkeypatch.setattr(loading, "MIN_PART_ITEMS", 20)
    lines = log_lines(1_000, sessions=9, seed=7, broken_every=89)
    upload = _upload_without_parsing(auditor, lines)
    real_write = loading._Store._write
    writes: list[tuple[int, int]] = []

    def flaky(store, batch):
        writes.append((batch.start, len(batch.items)))
        if len(writes) in (2, 3):
            if when == "after the commit":
                real_write(store, batch)
            _terminated()
        return real_write(store, batch)

    monkeypatch.setattr(loading._Store, "_write", flaky)
    loading.parse_upload(upload.pk)
    upload.refresh_from_db()

    assert upload.attempts == 1
    assert_every_line_once(upload, lines)
    whole, half, quarter = writes[1:4]
    assert half[0] == whole[0] and half[1] < whole[1]  # again in halves, the first first
    assert quarter[0] == half[0] and quarter[1] < half[1]  # lost again: in quarters


def test_a_lost_connection_spends_no_attempt_and_the_parse_goes_on_from_the_checkpoint(
        auditor, monkeypatch, settings):
    """Inside a caller's transaction nothing is retried in place: the task parses again from
    the checkpoint, claiming the upload without counting an attempt."""
    from worker.uploads import parse_upload_task

    settings.UPLOAD_MAX_ATTEMPTS = 1
    monkeypatch.setattr(loading, "BATCH_EVENTS", 100)
    monkeypatch.setattr(loading, "FIRST_BATCH_EVENTS", 100)
    lines = log_lines(500, sessions=5, seed=3)
    upload = _upload_without_parsing(auditor, lines)
    real_write = loading._Store._write
    writes = []

    def lost_on_the_third(store, batch):
        writes.append(batch.start)
        if len(writes) == 3:
            _terminated()
        return real_write(store, batch)

    monkeypatch.setattr(loading._Store, "_write", lost_on_the_third)
    assert parse_upload_task.apply(args=[upload.pk]).get() == "parsed"
    upload.refresh_from_db()
    assert upload.attempts == 1
    assert writes[2] == writes[3] > 0  # the rerun started at the batch that was lost
    assert_every_line_once(upload, lines)


def test_a_database_away_longer_than_the_stall_period_spends_attempts_and_the_upload_fails(
        auditor, monkeypatch, settings):
    from worker.uploads import parse_upload_task

    settings.UPLOAD_MAX_ATTEMPTS = 2
    settings.AUDIT_STALL_SECONDS = 0.2
    lines = log_lines(50, sessions=2, seed=5)
    upload = _upload_without_parsing(auditor, lines)
    calls = []

    def always_lost(store, batch):
        calls.append(batch.start)
        _terminated()

    monkeypatch.setattr(loading._Store, "_write", always_lost)
    assert parse_upload_task.apply(args=[upload.pk]).get() == "failed"
    upload.refresh_from_db()
    assert upload.status == "failed" and upload.error.startswith("gave up after 2 attempts")
    assert len(calls) >= 3  # retried without counting, then the two attempts were spent


@pytest.mark.django_db(transaction=True)
def test_lost_connections_retried_in_place_give_way_to_the_task_and_then_to_attempts(
        auditor, monkeypatch, settings):
    """On its own connection the parse retries in place for UPLOAD_RECONNECT_SECONDS, then the
    task retries it until AUDIT_STALL_SECONDS; after that attempts are spent, and it ends."""
    from worker.uploads import parse_upload_task

    settings.UPLOAD_MAX_ATTEMPTS = 2
    settings.UPLOAD_RECONNECT_SECONDS = 0.2
    settings.AUDIT_STALL_SECONDS = 0.5
    lines = log_lines(50, sessions=2, seed=5)
    upload = _upload_without_parsing(auditor, lines)
    runs = []
    real_claim = loading._claim

    def counted_claim(upload_id, spend=True):
        runs.append(spend)
        return real_claim(upload_id, spend)

    monkeypatch.setattr(loading, "_claim", counted_claim)
    monkeypatch.setattr(loading._Store, "_write", lambda store, batch: _terminated())
    assert parse_upload_task.apply(args=[upload.pk]).get() == "failed"
    upload.refresh_from_db()
    assert upload.status == "failed" and upload.error.startswith("gave up after 2 attempts")
    # The first run spent an attempt, the task's reruns within the stall period none; then
    # the second attempt, and the claim that gives up.
    assert runs[0] and not any(runs[1:-2]) and all(runs[-2:]) and len(runs) >= 4


# --- resuming a failed upload -----------------------------------------------------------------

def _fail_part_way(auditor, monkeypatch, lines: list[str]) -> Upload:
    """Upload ``lines`` in batches of 100 with the third batch failing on a bug: the upload
    fails with the first two batches stored."""
    monkeypatch.setattr(loading, "BATCH_EVENTS", 100)
    monkeypatch.setattr(loading, "FIRST_BATCH_EVENTS", 100)
    real_write = loading._Store._write
    writes = []

    def broken_third(store, batch):
        writes.append(batch.start)
        if len(writes) == 3:
            raise RuntimeError("a bug in the loader")
        return real_write(store, batch)

    monkeypatch.setattr(loading._Store, "_write", broken_third)
    response = auditor.upload("".join(text + "\n" for text in lines).encode(), "jsonl")
    assert response.status_code == 201, response.content
    monkeypatch.setattr(loading._Store, "_write", real_write)  # the bug is fixed
    upload = Upload.objects.get(pk=response.json()["id"])
    stored_before = sum(1 for text in lines[:upload.items_done] if not text.startswith("not"))
    assert (upload.status, upload.events_stored) == ("failed", stored_before)
    assert 0 < upload.items_done < len(lines) and "internal error" in upload.error
    return upload


def test_a_failed_upload_resumes_by_api_and_ends_with_every_event_once(auditor, monkeypatch):
    lines = log_lines(700, sessions=6, seed=11, broken_every=97)
    upload = _fail_part_way(auditor, monkeypatch, lines)

    with auditor.capture(execute=True):
        response = auditor.client.post(f"/api/w/acme/uploads/{upload.pk}/resume")
    assert response.status_code == 200, response.content
    upload.refresh_from_db()
    assert upload.attempts == 1 and upload.error == ""
    assert_every_line_once(upload, lines)
    entry = AuditLogEntry.objects.get(action="upload.resumed")
    assert entry.details["items_done"] > 0 and "internal error" in entry.details["failure"]

    again = auditor.client.post(f"/api/w/acme/uploads/{upload.pk}/resume")
    assert again.status_code == 409
    assert "parsed, not failed" in again.json()["detail"]


def test_uploading_the_file_of_a_failed_upload_again_resumes_it(auditor, monkeypatch):
    lines = log_lines(500, sessions=4, seed=13)
    upload = _fail_part_way(auditor, monkeypatch, lines)

    response = auditor.upload("".join(text + "\n" for text in lines).encode(), "jsonl",
                              name="renamed.jsonl")
    assert response.status_code == 200 and response.json()["id"] == upload.pk
    upload.refresh_from_db()
    assert_every_line_once(upload, lines)
    assert Upload.objects.count() == 1
    assert AuditLogEntry.objects.filter(action="upload.resumed").count() == 1


def test_the_upload_page_offers_to_resume_a_failed_upload(person, auditor, monkeypatch):
    lines = log_lines(400, sessions=3, seed=17)
    upload = _fail_part_way(auditor, monkeypatch, lines)
    page = person.client.get(f"/w/acme/uploads/{upload.pk}/")
    assert page.status_code == 200
    assert f'action="/w/acme/uploads/{upload.pk}/resume"' in page.content.decode()

    with person.capture(execute=True):
        response = person.client.post(f"/w/acme/uploads/{upload.pk}/resume")
    assert response.status_code == 302
    upload.refresh_from_db()
    assert_every_line_once(upload, lines)
    page = person.client.get(f"/w/acme/uploads/{upload.pk}/")
    assert "/resume" not in page.content.decode()  # parsed: nothing to resume


def test_a_resumed_upload_waiting_for_a_worker_keeps_its_progress(auditor, monkeypatch):
    lines = log_lines(400, sessions=3, seed=19)
    upload = _fail_part_way(auditor, monkeypatch, lines)
    read, stored_before = upload.bytes_read, upload.events_stored
    monkeypatch.setattr(intake, "enqueue_parse", lambda upload_id: None)  # no worker yet
    with auditor.capture(execute=True):
        response = auditor.client.post(f"/api/w/acme/uploads/{upload.pk}/resume")
    body = response.json()
    assert (body["status"], body["events_stored"]) == ("received", stored_before)
    assert 0 < read < upload.size and body["percent"] == round(100 * read / upload.size, 1)
