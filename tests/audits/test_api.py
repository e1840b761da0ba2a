"""The audits API: start (auditor role), list, status, results with filters and pages, one
session's lanes and witnesses, JSON and CSV reports; outsiders get 404 everywhere."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client

from studio.audits.models import AuditRun, SessionResult
from studio.rules.models import RuleSet
from studio.workspaces import services as ws
from studio.workspaces.models import AuditLogEntry

from .helpers import RULES, add_rule, add_rules, add_sessions, make_team, make_upload

pytestmark = pytest.mark.django_db


class Api:
    def __init__(self, user=None, token=None):
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        if user is not None:
            self.client.force_login(user)

    def get(self, path, **params):
        return self.client.get(f"/api/w/{path}", params, headers=self.headers)

    def post(self, path, body=None):
        return self.client.post(f"/api/w/{path}", json.dumps(body or {}),
                                content_type="application/json", headers=self.headers)


@pytest.fixture
def team(team):
    add_rule(team, "respond", "G(request -> F answer)")
    add_rule(team, "no_delete", "G !delete")
    add_rule(team, "logs_out", "F logout")
    add_sessions(team, {
        "a": [{"labels": ["request"]}, {"labels": ["answer"]}, {"labels": ["request"]},
              {"labels": []}],
        "b": [{"labels": ["delete"]}, {"labels": ["logout"]}],
        "=cmd|' /C calc'!A0": [{"labels": ["logout"]}],
    })
    return team


@pytest.fixture
def run_tasks(django_capture_on_commit_callbacks):
    """Run what requests enqueue after commit (tasks in-process)."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def audit(team, run_tasks):
    """A finished audit, as GET shows it.  (Its tasks run when the test's transaction would
    commit, after the POST answered; without an outer transaction the POST already runs them.)"""
    with run_tasks():
        response = Api(team.auditor).post("acme/audits")
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "queued"
    return Api(team.auditor).get(f"acme/audits/{response.json()['id']}").json()


def sid(team, external):
    return team.workspace.sessions.get(external_id=external).id


def test_an_auditor_starts_an_audit_and_gets_the_run(team, audit):
    assert audit["status"] == "done"
    assert audit["progress"] == {
        "status": "done", "percent": 100.0, "sessions_done": 3, "sessions_total": 3,
        "batches_done": 1, "batches_total": 1, "error": "", "finished_at": audit["finished_at"]}
    assert [v["rule"] for v in audit["rule_versions"]] == ["logs_out", "no_delete", "respond"]
    assert audit["created_by"] == "auditor-acme" and audit["upload"] is None


def test_a_token_with_the_auditor_role_may_start_one(team, run_tasks):
    _, secret = ws.create_token(team.workspace, "ci", ["auditor"], team.auditor)
    with run_tasks():
        response = Api(token=secret).post("acme/audits")
    assert response.status_code == 201
    assert response.json()["created_by"] == "auditor-acme"  # a token acts for its creator
    assert AuditRun.objects.get().status == "done"


def test_starting_needs_the_auditor_role(team):
    response = Api(team.author).post("acme/audits")
    assert response.status_code == 403
    assert "auditor" in response.json()["detail"]
    _, secret = ws.create_token(team.workspace, "reader", ["author"], team.author)
    assert Api(token=secret).post("acme/audits").status_code == 403
    assert not AuditRun.objects.exists()


def test_rule_set_and_upload_are_looked_up_in_the_workspace(team, run_tasks):
    other = make_team("beta")
    foreign_set = RuleSet.objects.create(workspace=other.workspace, name="x")
    foreign_upload = make_upload(other)
    api = Api(team.auditor)
    assert api.post("acme/audits", {"rule_set": foreign_set.id}).status_code == 404
    assert api.post("acme/audits", {"upload": foreign_upload.id}).status_code == 404
    empty = RuleSet.objects.create(workspace=team.workspace, name="empty set")
    response = api.post("acme/audits", {"rule_set": empty.id})
    assert response.status_code == 400
    assert response.json() == {"detail": "rule set 'empty set' has no approved rule versions",
                               "field": "rule_set"}
    rule_set = RuleSet.objects.create(workspace=team.workspace, name="deletes")
    rule_set.rules.add(team.workspace.rules.get(name="no_delete"))
    with run_tasks():
        response = api.post("acme/audits", {"rule_set": rule_set.id})
    assert response.status_code == 201
    assert response.json()["rule_set_name"] == "deletes"
    assert [v["rule"] for v in response.json()["rule_versions"]] == ["no_delete"]


def test_list_and_status(team, audit):
    api = Api(team.author)  # any member reads
    listed = api.get("acme/audits")
    assert listed.status_code == 200 and [r["id"] for r in listed.json()] == [audit["id"]]
    one = api.get(f"acme/audits/{audit['id']}")
    assert one.status_code == 200 and one.json()["progress"]["percent"] == 100.0


def test_results_with_filters_and_pages(team, audit):
    api = Api(team.auditor)
    page = api.get(f"acme/audits/{audit['id']}/results").json()
    assert page["count"] == 9 and len(page["items"]) == 9
    a_respond = next(r for r in page["items"]
                     if r["session"] == "a" and r["rule"] == "respond")
    assert a_respond == {
        "session_id": sid(team, "a"), "session": "a", "rule": "respond", "rule_version": 1,
        "rule_version_id": a_respond["rule_version_id"], "steps": 4,
        "session_verdict": "violated", "verdict": "open",
        "first_verdict_step": None, "final": "violated",
        "residual": "F answer & G (!request | F answer)", "violations": 1,
        # The old names, kept for one release (docs/api-verdicts.md).
        "session_verdict_was": "violated", "verdict_was": "pending", "final_was": "violated"}
    # The one verdict: TRAC was still open when the log ended, but a violation was counted.
    one = api.get(f"acme/audits/{audit['id']}/results", session_verdict="violated").json()
    assert sorted((r["session"], r["rule"]) for r in one["items"]) == [
        ("a", "logs_out"), ("a", "respond"), ("b", "no_delete")]
    assert api.get(f"acme/audits/{audit['id']}/results",
                   session_verdict="open").json()["count"] == 0  # uploaded logs ended
    # The old names still filter, for one release.
    assert api.get(f"acme/audits/{audit['id']}/results",
                   session_verdict="pending").json()["count"] == 0
    assert api.get(f"acme/audits/{audit['id']}/results",
                   session_verdict="satisfied").json()["count"] == 6

    violated = api.get(f"acme/audits/{audit['id']}/results", verdict="violated").json()
    assert [(r["session"], r["rule"]) for r in violated["items"]] == [("b", "no_delete")]
    by_rule = api.get(f"acme/audits/{audit['id']}/results", rule="logs_out", final="complied")
    assert {r["session"] for r in by_rule.json()["items"]} == {"b", "=cmd|' /C calc'!A0"}
    assert api.get(f"acme/audits/{audit['id']}/results", rule="logs_out",
                   final="satisfied").json() == by_rule.json()
    with_violations = api.get(f"acme/audits/{audit['id']}/results", violated=True).json()
    assert with_violations["count"] == 3  # a: respond, logs_out; b: no_delete
    one_session = api.get(f"acme/audits/{audit['id']}/results", session=sid(team, "b")).json()
    assert one_session["count"] == 3

    first = api.get(f"acme/audits/{audit['id']}/results", limit=4).json()
    rest = api.get(f"acme/audits/{audit['id']}/results", limit=4, offset=4).json()
    assert (first["count"], len(first["items"]), len(rest["items"])) == (9, 4, 4)
    assert not {(r["session_id"], r["rule"]) for r in first["items"]} & {
        (r["session_id"], r["rule"]) for r in rest["items"]}
    assert api.get(f"acme/audits/{audit['id']}/results", limit=-5, offset=-1).status_code == 200
    assert api.get(f"acme/audits/{audit['id']}/results", verdict="maybe").status_code == 422
    assert api.get(f"acme/audits/{audit['id']}/results", rule="a\x00b").status_code == 422
    far = api.get(f"acme/audits/{audit['id']}/results", offset=10**30)
    assert far.status_code == 200 and far.json()["items"] == []
    assert api.get(f"acme/audits/{2**70}/results").status_code == 404


def test_one_sessions_lanes_and_witnesses(team, audit):
    response = Api(team.auditor).get(f"acme/audits/{audit['id']}/sessions/{sid(team, 'a')}")
    assert response.status_code == 200
    body = response.json()
    assert (body["session"], body["steps"]) == ("a", 4)
    lanes = {lane["rule"]: lane for lane in body["rules"]}
    assert lanes["respond"]["timeline"] == [{"step": 0, "verdict": "open",
                                             "verdict_was": "pending"}]
    # Each violation is explained in a sentence; residuals come with their English reading.
    assert lanes["respond"]["violations"] == [
        {"trigger": 2, "detected": 3, "at_end": True,
         "explanation": "Step 2: the step was labelled request, so the rule then required: "
                        "the next step or a later one is labelled answer. The session ended at "
                        "step 3 without that.",
         "witness": [{"step": 2, "labels": ["request"], "residual": "F answer",
                      "residual_english": "still owed: the next step or a later one is "
                                          "labelled answer."}]}]
    assert lanes["logs_out"]["final"] == "violated"
    # The session has ended: nothing is owed any more, the end left the rule unmet.
    assert lanes["logs_out"]["residual_english"] == (
        "left unmet when the session ended: the next step or a later one is labelled logout.")
    assert lanes["no_delete"]["violations"] == []

    b = Api(team.auditor).get(f"acme/audits/{audit['id']}/sessions/{sid(team, 'b')}").json()
    no_delete = {lane["rule"]: lane for lane in b["rules"]}["no_delete"]
    assert no_delete["timeline"] == [{"step": 0, "verdict": "violated",
                                      "verdict_was": "violated"}]
    assert no_delete["residual_english"] == "can no longer be met (since step 0)"
    assert no_delete["violations"][0]["witness"] == [
        {"step": 0, "labels": ["delete"], "residual": "false",
         "residual_english": "can no longer be met (since step 0)"}]
    assert no_delete["violations"][0]["explanation"] == (
        "Step 0: the step was labelled delete, which the rule never allows.")


def test_reports(team, audit):
    api = Api(team.auditor)
    report = api.get(f"acme/audits/{audit['id']}/report.json").json()
    assert [r["rule"] for r in report["rules"]] == ["logs_out", "no_delete", "respond"]
    logs_out = report["rules"][0]
    # Totals count the one verdict: session a ended without logging out (violated, not
    # open as TRAC's verdict after the last step would say).  satisfied and pending: the old
    # names of complied and open, kept for one release.
    assert logs_out == {"rule": "logs_out", "rule_version": 1,
                        "rule_version_id": logs_out["rule_version_id"],
                        "counting": "after_violation",
                        "formula": "F logout", "sessions": 3, "complied": 2, "open": 0,
                        "satisfied": 2, "pending": 0,
                        "violated": 1, "final_violated": 1, "violations": 1,
                        "never_triggered": False, "trigger_unknown": False}
    assert logs_out["rule_version_id"] == audit["rule_versions"][0]["id"]
    rows = {s["session"]: s for s in report["sessions"]}
    assert rows["a"]["verdicts"] == ["violated", "complied", "violated"]
    assert rows["b"]["verdicts"] == ["complied", "violated", "complied"]
    assert rows["a"]["final"] == ["violated", "complied", "violated"]
    assert rows["a"]["verdicts_was"] == ["violated", "satisfied", "violated"]
    assert rows["a"]["violations"] == [1, 0, 1]
    assert rows["b"]["violations"] == [0, 1, 0]

    response = api.get(f"acme/audits/{audit['id']}/report.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response.streaming
    text = b"".join(response.streaming_content).decode()
    table = list(csv.reader(io.StringIO(text)))
    assert table[0] == ["session_id", "session", "steps",
                        "logs_out verdict", "logs_out final", "logs_out violations",
                        "no_delete verdict", "no_delete final", "no_delete violations",
                        "respond verdict", "respond final", "respond violations"]
    body = {row[1]: row for row in table[1:]}
    assert body["a"][2:] == ["4", "violated", "violated", "1", "complied", "complied", "0",
                             "violated", "violated", "1"]
    # A session id that a spreadsheet would run as a formula is neutralised.
    assert "'=cmd|' /C calc'!A0" in body
    assert len(table) == 4


def test_an_upload_audit_through_the_api(team, run_tasks):
    upload = make_upload(team)
    add_sessions(team, {"up": [{"labels": ["delete"]}]}, upload=upload)
    with run_tasks():
        response = Api(team.auditor).post("acme/audits", {"upload": upload.id})
    assert response.status_code == 201
    run = AuditRun.objects.get(pk=response.json()["id"])
    assert run.sessions_total == 1
    assert SessionResult.objects.filter(run=run).count() == 3


def test_resume_enqueues_unfinished_batches(team, run_tasks, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        started = Api(team.auditor).post("acme/audits").json()  # its tasks were lost
    assert started["status"] == "queued"
    with run_tasks():
        response = Api(team.auditor).post(f"acme/audits/{started['id']}/resume")
    assert response.json() == {"id": started["id"], "enqueued": 1}
    assert AuditLogEntry.objects.filter(action="audit.resumed").count() == 1
    assert Api(team.auditor).get(f"acme/audits/{started['id']}").json()["status"] == "done"
    again = Api(team.auditor).post(f"acme/audits/{started['id']}/resume")
    assert again.status_code == 409


def test_outsiders_get_404_on_every_route(team, audit):
    outsider = Api(team.outsider)
    run = audit["id"]
    session = sid(team, "a")
    for path in ["acme/audits", f"acme/audits/{run}", f"acme/audits/{run}/results",
                 f"acme/audits/{run}/sessions/{session}", f"acme/audits/{run}/report.json",
                 f"acme/audits/{run}/report.csv"]:
        assert outsider.get(path).status_code == 404, path
    assert outsider.post("acme/audits").status_code == 404
    assert outsider.post(f"acme/audits/{run}/resume").status_code == 404
    # Nor does another workspace's member reach this run through their own workspace.
    assert outsider.get(f"other-acme/audits/{run}").status_code == 404
    assert outsider.get(f"other-acme/audits/{run}/report.csv").status_code == 404
    # A foreign token, likewise.
    _, secret = ws.create_token(team.workspace.__class__.objects.get(slug="other-acme"), "t",
                                ["auditor"], team.outsider)
    assert Api(token=secret).get(f"acme/audits/{run}").status_code == 404
    assert Api().get(f"acme/audits/{run}").status_code == 401


def test_a_session_of_another_workspace_is_404_inside_a_run(team, audit):
    other = make_team("beta")
    foreign = add_sessions(other, {"z": [{"labels": []}]})["z"]
    response = Api(team.auditor).get(f"acme/audits/{audit['id']}/sessions/{foreign.id}")
    assert response.status_code == 404


def test_every_rule_is_in_the_report_even_before_results(team, django_capture_on_commit_callbacks):
    add_rules(team, RULES[:2])
    with django_capture_on_commit_callbacks(execute=False):
        started = Api(team.auditor).post("acme/audits").json()
    report = Api(team.auditor).get(f"acme/audits/{started['id']}/report.json").json()
    assert report["status"] == "queued" and report["sessions"] == []
    assert all(r["sessions"] == 0 for r in report["rules"]) and len(report["rules"]) == 5


@pytest.mark.django_db(transaction=True)
def test_without_a_task_queue_the_run_is_kept_and_can_be_resumed(team, monkeypatch):
    # Committed for real, so the batches are enqueued inside the request, as in production.
    from kombu.exceptions import OperationalError

    from worker.audits import run_audit_batch

    def down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(run_audit_batch, "apply_async", down)
    response = Api(team.auditor).post("acme/audits")
    run = AuditRun.objects.get()
    assert response.status_code == 503
    assert f"audit {run.id} is stored but the task queue is unavailable" in (
        response.json()["detail"])
    assert run.status == "queued" and "resume" in run.error

    monkeypatch.undo()
    resumed = Api(team.auditor).post(f"acme/audits/{run.id}/resume")
    assert resumed.json()["enqueued"] == 1
    run.refresh_from_db()
    assert (run.status, run.error) == ("done", "")


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_batches_run_without_a_resume_drops_the_stale_queue_error(team, monkeypatch):
    """The queue was down when the run started, but its batches ran anyway (the sweeper
    requeued them, or a message got through): once they run, "resume it" is no longer true."""
    from kombu.exceptions import OperationalError

    from studio.audits import services
    from worker.audits import run_audit_batch

    def down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(run_audit_batch, "apply_async", down)
    assert Api(team.auditor).post("acme/audits").status_code == 503
    monkeypatch.undo()
    run = AuditRun.objects.get()
    assert "resume it" in run.error
    for batch_id in run.batches.values_list("id", flat=True):
        assert services.run_batch(batch_id) == "done"
    run.refresh_from_db()
    assert (run.status, run.error) == ("done", "")
    progress = Api(team.auditor).get(f"acme/audits/{run.id}").json()
    assert not progress.get("error")
