"""What a version would change on stored sessions (an audit run of both versions, tasks run
in-process after commit), its counts in the approval's audit-log entry and the evidence report,
and two audit runs compared as JSON, CSV and a page."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client

from studio.audits import services as audits
from studio.evidence.models import ImpactCheck
from studio.rules import services as rules
from studio.rules.models import RuleVersion
from studio.workspaces.models import AuditLogEntry
from tests.audits.helpers import add_rule, add_sessions, make_team

pytestmark = pytest.mark.django_db

ACK = {"acknowledgement": "the logs arrive labelled with request and answer"}


@pytest.fixture
def team_slug():
    return "impact"


@pytest.fixture
def team(team):
    team.v1 = add_rule(team, "answered", "G(request -> F answer)")
    team.rule = team.v1.rule
    team.sessions = add_sessions(team, {
        "both-comply": [{"labels": ["request"]}, {"labels": ["answer"]}],
        "late-answer": [{"labels": ["request"]}, {"labels": []}, {"labels": ["answer"]}],
        "never": [{"labels": ["request"]}],
        "quiet": [{"labels": []}],
    })
    team.v2 = rules.new_version(team.rule, team.author, "G(request -> X answer)")
    return team


def client(user):
    c = Client()
    c.force_login(user)
    return c


def post(c, path, body=None):
    return c.post(f"/api/w/{path}", json.dumps(body or {}), content_type="application/json")


def test_impact_check_lists_the_sessions_that_change_with_the_first_differing_step(
        team, django_capture_on_commit_callbacks):
    reviewer = client(team.reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        started = post(reviewer, f"impact/rules/{team.rule.id}/versions/2/impact")
    assert started.status_code == 202, started.content
    answer = reviewer.get(f"/api/w/impact/rules/{team.rule.id}/versions/2/impact").json()
    assert answer["progress"]["status"] == "done" and answer["baseline"] == 1
    summary = answer["summary"]
    assert summary["sessions_compared"] == 4
    assert summary["sessions_changed"] == 1 and summary["to_violated"] == 1
    (change,) = summary["sessions_list"]
    assert change["session"] == "late-answer" and change["step"] == 1
    assert (change["verdict_before"], change["verdict_after"]) == ("complied", "violated")
    assert (change["verdict_before_was"], change["verdict_after_was"]) == (
        "satisfied", "violated")
    assert change["new_violations"] == [{"trigger": 0, "detected": 1}]
    shown = reviewer.get(f"/api/w/impact/rules/{team.rule.id}/versions/2/impact",
                         {"witnesses": "true"}).json()["summary"]["sessions_list"][0]
    assert shown["witnesses"]["before"] is None
    assert shown["witnesses"]["after"]["detected"] == 1
    assert shown["witnesses"]["after"]["witness"][0]["labels"] == ["request"]
    assert shown["witnesses"]["after"]["explanation"].startswith("Step ")
    assert shown["witnesses"]["after"]["witness"][0]["reading"].startswith("still owed:")

    # The review page's section: counts, the link at the step, both witnesses side by side.
    page = reviewer.get(f"/w/impact/rules/{team.rule.id}/impact?v=2")
    text = page.content.decode()
    assert page.status_code == 200
    assert "1 of 4 sessions would change" in text
    run = ImpactCheck.objects.get().run_id
    assert f"?run={run}&amp;step=1" in text
    assert "no violation" in text and "triggered at step 0, detected at step 1" in text
    # Impact runs stay out of the audit list.
    listed = reviewer.get("/api/w/impact/audits").json()
    assert run not in [r["id"] for r in listed]

    # Approving records the counts; the evidence report of a later audit shows them.
    author = client(team.author)
    assert post(author, f"impact/rules/{team.rule.id}/versions/2/submit", ACK).status_code == 200
    assert post(reviewer, f"impact/rules/{team.rule.id}/versions/2/approve",
                {"comment": "ok"}).status_code == 200
    entry = AuditLogEntry.objects.get(action="rule_version.approved",
                                      target_id=team.v2.id)
    assert entry.details["impact"]["sessions_changed"] == 1
    assert entry.details["impact"]["to_violated"] == 1
    assert entry.details["cases"] == {"cases": 0, "passed": 0, "failing": []}
    with django_capture_on_commit_callbacks(execute=True):
        later = audits.start_audit(team.workspace, by=team.auditor)
    evidence = client(team.auditor).get(f"/w/impact/audits/{later.id}/evidence")
    assert "1 of 4 sessions changed against version 1" in evidence.content.decode()


def test_a_sample_states_its_size(team, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        started = post(client(team.author), f"impact/rules/{team.rule.id}/versions/2/impact",
                       {"scope": "sample", "sample_size": 2, "seed": 1})
    body = started.json()
    assert (body["scope"], body["sample_size"], body["sessions_available"]) == ("sample", 2, 4)
    assert body["sessions"] == 2


def test_no_stored_sessions_is_said_not_an_empty_success():
    team = make_team("empty")
    version = add_rule(team, "r", "G !delete", approved=False)
    answer = post(client(team.author), f"empty/rules/{version.rule_id}/versions/1/impact")
    assert answer.status_code == 409
    assert "no stored sessions" in answer.json()["detail"]
    page = client(team.author).post(f"/w/empty/rules/{version.rule_id}/impact?v=1",
                                    {"scope": "all"}, headers={"HX-Request": "true"})
    assert page.status_code == 422 and "no stored sessions" in page.content.decode()


def test_approved_versions_are_not_impact_checked_and_outsiders_get_404(team):
    assert post(client(team.author),
                f"impact/rules/{team.rule.id}/versions/1/impact").status_code == 409
    assert post(client(team.auditor),
                f"impact/rules/{team.rule.id}/versions/2/impact").status_code == 403
    assert post(client(team.outsider),
                f"impact/rules/{team.rule.id}/versions/2/impact").status_code == 404


def test_two_runs_compared_as_json_csv_and_page(team, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        before = audits.start_audit(team.workspace, by=team.auditor)
    rules.submit_for_review(RuleVersion.objects.get(pk=team.v2.pk), team.author,
                            ACK["acknowledgement"])
    rules.approve(RuleVersion.objects.get(pk=team.v2.pk), team.reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        after = audits.start_audit(team.workspace, by=team.auditor)
    c = client(team.auditor)
    body = c.get(f"/api/w/impact/audits/{before.id}/compare/{after.id}").json()
    (rule,) = body["rules"]
    assert (rule["version_before"], rule["version_after"]) == (1, 2)
    assert rule["verdict_changed"] == 1 and rule["new_violations"] == 1
    assert (rule["sessions_only_before"], rule["sessions_only_after"]) == (0, 0)
    assert rule["sessions"][0]["session"] == "late-answer" and rule["sessions"][0]["step"] == 1
    back = c.get(f"/api/w/impact/audits/{after.id}/compare/{before.id}").json()["rules"][0]
    assert back["disappeared_violations"] == 1 and back["to_satisfied"] == 1

    rows = list(csv.DictReader(io.StringIO(c.get(
        f"/api/w/impact/audits/{before.id}/compare/{after.id}", {"format": "csv"})
        .content.decode())))
    assert [(r["session"], r["new_violations"], r["step"]) for r in rows] == [
        ("late-answer", "0-1", "1")]

    page = c.get("/w/impact/audits/compare", {"before": before.id, "after": after.id})
    text = page.content.decode()
    assert page.status_code == 200 and "late-answer" in text
    session = team.sessions["late-answer"].id
    assert f"/w/impact/sessions/{session}/?run={after.id}&amp;step=1" in text
    assert c.get("/w/impact/audits/compare",
                 {"before": before.id, "after": after.id, "format": "csv"}).status_code == 200
    assert client(team.outsider).get(
        f"/api/w/impact/audits/{before.id}/compare/{after.id}").status_code == 404
    assert client(team.outsider).get("/w/impact/audits/compare").status_code == 404


def test_a_rule_without_an_approved_version_is_checked_against_nothing(
        django_capture_on_commit_callbacks):
    team = make_team("fresh")
    version = add_rule(team, "no_delete", "G !delete", approved=False)
    add_sessions(team, {"deletes": [{"labels": []}, {"labels": ["delete"]}],
                        "keeps": [{"labels": []}]})
    with django_capture_on_commit_callbacks(execute=True):
        started = post(client(team.author), f"fresh/rules/{version.rule_id}/versions/1/impact")
    body = client(team.author).get(
        f"/api/w/fresh/rules/{version.rule_id}/versions/1/impact").json()
    assert started.status_code == 202 and body["baseline"] is None
    (change,) = body["summary"]["sessions_list"]
    assert (change["session"], change["step"], change["verdict_after"]) == ("deletes", 1,
                                                                            "violated")


def test_a_check_of_an_earlier_draft_is_stale_and_not_counted_at_approval(
        team, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        post(client(team.author), f"impact/rules/{team.rule.id}/versions/2/impact")
    rules.update_draft(RuleVersion.objects.get(pk=team.v2.pk), team.author,
                       formula="G(request -> F[0,1] answer)")
    body = client(team.author).get(
        f"/api/w/impact/rules/{team.rule.id}/versions/2/impact").json()
    assert body["stale"] is True
    page = client(team.author).get(f"/w/impact/rules/{team.rule.id}/impact?v=2")
    assert "edited after this check" in page.content.decode()
    rules.submit_for_review(RuleVersion.objects.get(pk=team.v2.pk), team.author,
                            ACK["acknowledgement"])
    rules.approve(RuleVersion.objects.get(pk=team.v2.pk), team.reviewer)
    entry = AuditLogEntry.objects.get(action="rule_version.approved", target_id=team.v2.id)
    assert entry.details["impact"]["stale"] is True
