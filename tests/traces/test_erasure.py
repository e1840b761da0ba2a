"""Erasure and retention over HTTP: what an erased upload or session takes with it, what it
leaves, who may erase, the notes on the audit runs and in the audit log; retention; and the
uploads that are no logs (summary lines, binary files)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from studio.audits.models import AuditRun, SessionResult, ViolationRecord
from studio.traces import erasure, intake
from studio.traces.models import Event, TraceSession, Upload, UploadError
from studio.workspaces import services as ws
from studio.workspaces.models import AuditLogEntry, Role
from tests.audits.helpers import add_rule, make_team

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def upload_root(settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path / "uploads"


@pytest.fixture
def team():
    team = make_team("erase")
    add_rule(team, "no_delete", "G !delete")
    return team


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def upload(client, content: bytes, name: str, capture, audit=True, slug="erase") -> dict:
    body = {"file": SimpleUploadedFile(name, content), "format": "jsonl",
            "audit": "true" if audit else "false"}
    with capture(execute=True):
        response = client.post(f"/api/w/{slug}/uploads", data=body)
    assert response.status_code == 201, response.content
    return client.get(f"/api/w/{slug}/uploads/{response.json()['id']}").json()


def test_erasing_an_upload_removes_exactly_its_events_and_what_read_them(
        team, django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    auditor = client_for(team.auditor)
    first = upload(auditor, jsonl({"session": "only-a", "labels": ["delete"]},
                                  {"session": "only-a", "labels": []},
                                  {"session": "shared", "labels": ["delete"]},
                                  {"session": "shared", "labels": []}), "a.jsonl", capture)
    second = upload(auditor, jsonl({"session": "shared", "input": "later"},
                                   {"session": "only-b", "labels": ["delete"]}),
                    "b.jsonl", capture)
    with capture(execute=True):
        response = auditor.post("/api/w/erase/audits", {}, content_type="application/json")
    assert response.status_code in (200, 201, 202), response.content
    everything = AuditRun.objects.get(pk=response.json()["id"])
    run_a = AuditRun.objects.get(pk=first["audit_run"])
    run_b = AuditRun.objects.get(pk=second["audit_run"])
    assert ViolationRecord.objects.filter(result__session__external_id="only-b").exists()
    stored_a = intake.stored_file(Upload.objects.get(pk=first["id"]))
    stored_b = intake.stored_file(Upload.objects.get(pk=second["id"]))
    assert stored_a.exists() and stored_b.exists()
    # Results that read the erased events: every result of only-a and shared, in every run.
    reading = SessionResult.objects.filter(session__external_id__in=["only-a", "shared"])
    expected_results = reading.count()
    assert expected_results == 5  # run a (2 sessions), run b (shared), the workspace run (2)
    kept_results = set(SessionResult.objects.filter(session__external_id="only-b")
                       .values_list("id", flat=True))

    with capture(execute=True):  # the file goes once the erasure has committed
        answer = auditor.delete(f"/api/w/erase/uploads/{first['id']}")

    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["events"], body["sessions"], body["sessions_removed"], body["results"]) == (
        4, 2, 1, expected_results)
    assert body["by"] == team.auditor.username
    assert sorted(body["runs"]) == sorted([run_a.pk, run_b.pk, everything.pk])
    assert not Upload.objects.filter(pk=first["id"]).exists()
    assert not UploadError.objects.filter(upload_id=first["id"]).exists()
    assert not Event.objects.filter(upload_id=first["id"]).exists()
    assert not TraceSession.objects.filter(external_id="only-a").exists()
    shared = TraceSession.objects.get(external_id="shared")
    assert list(shared.events.values_list("upload_id", "input")) == [(second["id"], "later")]
    assert shared.steps == 1
    assert Event.objects.filter(upload_id=second["id"]).count() == 2  # the other upload's stay
    assert not reading.exists()
    assert set(SessionResult.objects.values_list("id", flat=True)) == kept_results
    assert ViolationRecord.objects.filter(result__session__external_id="only-b").exists()
    assert not stored_a.exists() and stored_b.exists()

    # Each run that covered the erased sessions says so, with its own results removed.
    for run, results in ((run_a, 2), (run_b, 1), (everything, 2)):
        run.refresh_from_db()
        [entry] = run.erasures
        assert (entry["kind"], entry["id"], entry["name"], entry["events"], entry["sessions"],
                entry["results"], entry["by"]) == ("upload", first["id"], "a.jsonl", 4, 2,
                                                   results, team.auditor.username)
    page = auditor.get(f"/w/erase/audits/{run_a.pk}/").content.decode()
    assert (f"Upload a.jsonl (#{first['id']}: 4 events, 2 sessions) was erased on "
            f"{timezone.now():%Y-%m-%d}") in page
    assert f"by {team.auditor.username}; 2 results of this run computed from it were removed" \
        in page
    assert f"the sessions of upload a.jsonl (#{first['id']}, since erased)" in page
    entry = AuditLogEntry.objects.get(action="upload.erased")
    assert entry.actor == team.auditor
    assert (entry.details["upload"], entry.details["events"], entry.details["sessions"],
            entry.details["sessions_removed"], entry.details["results"]) == (
        first["id"], 4, 2, 1, expected_results)

    # The same file can be uploaded again once erased.
    again = upload(auditor, jsonl({"session": "only-a", "labels": ["delete"]},
                                  {"session": "only-a", "labels": []},
                                  {"session": "shared", "labels": ["delete"]},
                                  {"session": "shared", "labels": []}), "a.jsonl", capture,
                   audit=False)
    assert again["id"] != first["id"] and again["status"] == "parsed"


def test_only_auditors_and_admins_erase(team, django_capture_on_commit_callbacks):
    auditor = client_for(team.auditor)
    made = upload(auditor, jsonl({"session": "s", "input": "x"}), "s.jsonl",
                  django_capture_on_commit_callbacks, audit=False)
    url = f"/api/w/erase/uploads/{made['id']}"
    assert client_for(team.author).delete(url).status_code == 403
    assert client_for(team.reviewer).delete(url).status_code == 403
    assert client_for(team.outsider).delete(url).status_code == 404
    assert client_for(team.author).post(f"/w/erase/uploads/{made['id']}/erase").status_code \
        == 403
    assert Event.objects.filter(upload_id=made["id"]).count() == 1
    admin = ws.create_user("admin-erase")
    ws.add_member(team.workspace, admin, Role.ADMIN)
    assert client_for(admin).delete(url).status_code == 200
    assert client_for(admin).delete(url).status_code == 404  # gone


def test_the_upload_page_confirms_before_erasing(team, django_capture_on_commit_callbacks):
    auditor = client_for(team.auditor)
    made = upload(auditor, jsonl({"session": "s", "input": "x"}, {"session": "t", "input": "y"}),
                  "page.jsonl", django_capture_on_commit_callbacks, audit=False)
    page = auditor.get(f"/w/erase/uploads/{made['id']}/").content.decode()
    assert "Erase this upload" in page and "hx-confirm=" in page
    # Without JavaScript the button opens a confirmation page; only its POST erases.
    confirm = auditor.get(f"/w/erase/uploads/{made['id']}/erase").content.decode()
    assert "Erase page.jsonl?" in confirm and "its 2 events" in confirm
    assert Event.objects.filter(upload_id=made["id"]).count() == 2
    with django_capture_on_commit_callbacks(execute=True):
        erased = auditor.post(f"/w/erase/uploads/{made['id']}/erase", follow=True)
    assert "page.jsonl was erased: 2 events, 2 sessions left with no event" \
        in erased.content.decode()
    assert not Upload.objects.filter(pk=made["id"]).exists()
    assert client_for(team.author).get(f"/w/erase/uploads/{made['id']}/").status_code == 404


def test_a_live_session_is_erased_whole(team):
    _, secret = ws.create_token(team.workspace, "agent", [Role.AUDITOR], team.auditor)
    agent = Client(headers={"Authorization": f"Bearer {secret}"})
    for sid in ("live-1", "live-2"):
        response = agent.post(f"/api/w/erase/live/sessions/{sid}/events",
                              {"events": [{"event_id": f"{sid}-e1", "labels": ["delete"]},
                                          {"event_id": f"{sid}-e2", "input": "hi"}]},
                              content_type="application/json")
        assert response.status_code == 200, response.content
    session = TraceSession.objects.get(external_id="live-1")
    assert client_for(team.author).delete(f"/api/w/erase/sessions/{session.pk}").status_code \
        == 403
    answer = agent.delete(f"/api/w/erase/sessions/{session.pk}")
    assert answer.status_code == 200, answer.content
    assert (answer.json()["kind"], answer.json()["events"], answer.json()["sessions_removed"]) \
        == ("session", 2, 1)
    assert not TraceSession.objects.filter(external_id="live-1").exists()
    assert Event.objects.filter(session__external_id="live-2").count() == 2
    entry = AuditLogEntry.objects.get(action="session.erased")
    assert entry.details["name"] == "live-1" and entry.actor_token is not None


def test_retention_erases_old_events_only(team, django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    auditor = client_for(team.auditor)
    old = upload(auditor, jsonl({"session": "old", "input": "x"}), "old.jsonl", capture)
    new = upload(auditor, jsonl({"session": "new", "input": "y"}), "new.jsonl", capture)
    long_ago = timezone.now() - timedelta(days=40)
    Upload.objects.filter(pk=old["id"]).update(created_at=long_ago)
    stale_live = TraceSession.objects.create(workspace=team.workspace, external_id="stale",
                                             source="live", steps=1, last_event_at=long_ago)
    Event.objects.create(workspace=team.workspace, session=stale_live, step=0, source="live",
                         input="old")
    fresh_live = TraceSession.objects.create(workspace=team.workspace, external_id="fresh",
                                             source="live", steps=1,
                                             last_event_at=timezone.now())
    Event.objects.create(workspace=team.workspace, session=fresh_live, step=0, source="live",
                         input="new")
    # No retention period: nothing goes.
    assert erasure.apply_retention() == 0
    # Only an admin sets it.
    assert client_for(team.auditor).patch("/api/w/erase", {"retention_days": 30},
                                          content_type="application/json").status_code == 403
    admin = ws.create_user("admin-retention")
    ws.add_member(team.workspace, admin, Role.ADMIN)
    answer = client_for(admin).patch("/api/w/erase", {"retention_days": 30},
                                     content_type="application/json")
    assert answer.status_code == 200 and answer.json()["retention_days"] == 30

    with capture(execute=True):
        assert erasure.apply_retention() == 2

    assert not Upload.objects.filter(pk=old["id"]).exists()
    assert sorted(TraceSession.objects.values_list("external_id", flat=True)) == [
        "fresh", "new"]
    assert Event.objects.filter(upload_id=new["id"]).count() == 1
    run = AuditRun.objects.get(pk=old["audit_run"])
    [entry] = run.erasures
    assert entry["reason"] == "retention: events are kept 30 days" and entry["by"] is None
    assert "automatically (retention: events are kept 30 days)" in run.erasure_notices()[0]
    assert AuditLogEntry.objects.filter(action="upload.erased").count() == 1
    assert AuditLogEntry.objects.filter(action="session.erased",
                                        details__name="stale").count() == 1
    assert erasure.apply_retention() == 0  # nothing left that old


def test_a_file_of_summary_lines_is_all_bad_lines_and_a_failed_upload(
        team, django_capture_on_commit_callbacks):
    auditor = client_for(team.auditor)
    upload(auditor, jsonl({"session": "s1", "input": "hello"}), "log.jsonl",
           django_capture_on_commit_callbacks, audit=False)
    summaries = jsonl(*[{"session": f"s{i}", "kind": "summary", "n_steps": 3} for i in range(5)])
    made = upload(auditor, summaries, "summary.jsonl", django_capture_on_commit_callbacks,
                  audit=False)
    assert (made["status"], made["lines_total"], made["lines_bad"], made["events_stored"]) == (
        "failed", 5, 5, 0)
    assert "ground-truth import" in made["error"] and "/api/w/erase/ground-truth" in made["error"]
    assert "line 1: no event fields (input, output, labels, data, lifeline or message); is " \
           "this a summary line?" in made["error"]
    errors = auditor.get(f"/api/w/erase/uploads/{made['id']}/errors").json()["items"]
    assert {e["reason"] for e in errors} == {
        "no event fields (input, output, labels, data, lifeline or message); is this a "
        "summary line?"}
    # No session gained a step, and none appeared.
    assert list(TraceSession.objects.values_list("external_id", "steps")) == [("s1", 1)]
    page = auditor.get(f"/w/erase/uploads/{made['id']}/").content.decode()
    assert "Parsing failed" in page and "ground-truth import" in page


def test_a_binary_file_fails_clearly(team, django_capture_on_commit_callbacks):
    auditor = client_for(team.auditor)
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
    made = upload(auditor, png, "picture.jsonl", django_capture_on_commit_callbacks,
                  audit=False)
    assert made["status"] == "failed" and made["events_stored"] == 0
    assert made["error"] == "picture.jsonl: the file is a PNG image, not a text log"
    blob = upload(auditor, b"\x00\x01\x02garbage\n\x00\xff", "blob.jsonl",
                  django_capture_on_commit_callbacks, audit=False)
    assert blob["status"] == "failed"
    assert "the file is binary, not a text log (it holds NUL bytes)" in blob["error"]


@pytest.mark.parametrize("wrong", ["too low", "too high"])
def test_sessions_are_kept_or_removed_by_their_events_even_when_a_step_count_is_wrong(
        team, django_capture_on_commit_callbacks, monkeypatch, wrong):
    """The sessions left with no event go, those with an event from elsewhere stay, whatever
    their step counts say (the erasure trusts a count of 0 only once the database has checked
    that no event points at the sessions it deletes)."""
    capture = django_capture_on_commit_callbacks
    auditor = client_for(team.auditor)
    first = upload(auditor, jsonl(*({"session": session, "step": step, "labels": ["x"]}
                                    for session, step in [("mixed", 0), ("mixed", 1),
                                                          ("alone", 0)])), "first.jsonl", capture)
    upload(auditor, jsonl({"session": "mixed", "step": 2, "labels": ["x"]}), "second.jsonl",
           capture)
    sessions = TraceSession.objects.filter(workspace=team.workspace)
    if wrong == "too low":  # "mixed" looks emptied by the erasure (2 - 2), but keeps step 2
        sessions.filter(external_id="mixed").update(steps=2)
    else:  # "alone" looks as if it kept an event
        sessions.filter(external_id="alone").update(steps=5)

    assert first["events_stored"] == 3, first
    warned = []
    monkeypatch.setattr(erasure.log, "warning", lambda *args: warned.append(args))
    with capture(execute=True):
        erased = erasure.erase_upload(Upload.objects.get(pk=first["id"]))

    assert (erased.events, erased.sessions, erased.sessions_removed) == (3, 2, 1)
    assert list(sessions.values_list("external_id", flat=True)) == ["mixed"]
    assert list(Event.objects.filter(workspace=team.workspace).values_list("step", flat=True)) \
        == [2]
    # On Postgres the count of 0 was refused, and said so (SQLite asks each session anyway).
    assert bool(warned) == (wrong == "too low" and connection.vendor == "postgresql")
