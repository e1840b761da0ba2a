"""Rule test cases over HTTP: adding them by hand, from a stored session and from a review aid's
trace; refusals naming the step and field; the check of every saved version; submission
blocked by a failing case until the case is changed (recorded); outsiders get 404."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from studio.evidence.models import RuleCase
from studio.rules.models import RuleVersion
from studio.workspaces.models import AuditLogEntry
from tests.audits.helpers import add_rule, add_sessions, make_team

pytestmark = pytest.mark.django_db


class Api:
    def __init__(self, user):
        self.client = Client()
        self.client.force_login(user)

    def get(self, path, **params):
        return self.client.get(f"/api/w/{path}", params)

    def post(self, path, body=None):
        return self.client.post(f"/api/w/{path}", json.dumps(body or {}),
                                content_type="application/json")

    def patch(self, path, body):
        return self.client.patch(f"/api/w/{path}", json.dumps(body),
                                 content_type="application/json")

    def delete(self, path):
        return self.client.delete(f"/api/w/{path}")


@pytest.fixture
def team_slug():
    return "cases"


@pytest.fixture
def team(team):
    team.version = add_rule(team, "examine_taken", "G(take -> X examine)")
    team.rule = team.version.rule
    return team


def cases_url(team):
    return f"cases/rules/{team.rule.id}/cases"


def test_add_list_and_delete_a_case_by_hand(team):
    api = Api(team.author)
    made = api.post(cases_url(team), {"name": "take then nothing", "expect": "violate",
                                      "at_step": 1, "steps": [{"atoms": ["take"]}, []]})
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["steps"] == [{"atoms": ["take"], "data": {}}, {"atoms": [], "data": {}}]
    assert body["result"]["passed"] and body["result"]["detected"] == [1]
    table = api.post(cases_url(team), {"name": "take, examine", "expect": "comply",
                                       "table": "take\nexamine"})
    assert table.status_code == 201 and table.json()["result"]["passed"]
    listed = api.get(cases_url(team)).json()
    assert [c["name"] for c in listed] == ["take then nothing", "take, examine"]
    assert api.delete(f"{cases_url(team)}/{body['id']}").status_code == 204
    assert RuleCase.objects.filter(rule=team.rule).count() == 1
    assert AuditLogEntry.objects.filter(action="rule_case.deleted").exists()


@pytest.mark.parametrize("steps, field", [
    ([{"atoms": ["take"]}, {"atoms": ["drop"]}], "steps[1].atoms"),
    ([{"atoms": "take"}], "steps[0].atoms"),
    ([{"atoms": []}, {"atoms": [], "data": {"data.amount": 3}}], "steps[1].data.data.amount"),
    ([{"atoms": [], "colour": "red"}], "steps[0].colour"),
    ([7], "steps[0]"),
    ("take", "steps"),
    ([], "steps"),
])
def test_a_case_that_does_not_parse_or_reads_other_atoms_is_refused_naming_step_and_field(
        team, steps, field):
    answer = Api(team.author).post(cases_url(team), {"name": "bad", "expect": "comply",
                                                     "steps": steps})
    assert answer.status_code == 422, answer.content
    assert answer.json()["field"] == field
    assert not RuleCase.objects.exists()


def test_only_authors_write_cases_and_outsiders_get_404(team):
    body = {"name": "x", "expect": "comply", "steps": [["take"], ["examine"]]}
    assert Api(team.auditor).post(cases_url(team), body).status_code == 403
    outsider = Api(team.outsider)
    assert outsider.get(cases_url(team)).status_code == 404
    assert outsider.post(cases_url(team), body).status_code == 404


def test_a_case_from_a_stored_session_step_range(team):
    sessions = add_sessions(team, {"s1": [{"labels": ["hello"]}, {"labels": ["take"]},
                                          {"labels": ["take", "other"]}, {"labels": []}]})
    answer = Api(team.author).post(cases_url(team), {
        "expect": "violate", "from_session": {"session_id": sessions["s1"].id,
                                              "from_step": 1, "to_step": 3}})
    assert answer.status_code == 201, answer.content
    body = answer.json()
    # Labels the rule does not read are left out; steps renumbered from the range's start.
    assert [s["atoms"] for s in body["steps"]] == [["take"], ["take"], []]
    assert body["source"] == {"kind": "session", "session_id": sessions["s1"].id,
                              "session": "s1", "from_step": 1, "to_step": 3}
    assert body["result"]["passed"]


def test_a_case_from_a_session_given_by_name(team):
    add_sessions(team, {"chat-7": [{"labels": ["take"]}, {"labels": []}]})
    api = Api(team.author)
    answer = api.post(cases_url(team), {"expect": "violate",
                                        "from_session": {"session": "chat-7"}})
    assert answer.status_code == 201, answer.content
    assert answer.json()["source"]["session"] == "chat-7"
    unknown = api.post(cases_url(team), {"from_session": {"session": "chat-8"}})
    assert unknown.status_code == 404
    assert unknown.json()["field"] == "session" and "chat-8" in unknown.json()["detail"]
    neither = api.post(cases_url(team), {"from_session": {"from_step": 0}})
    assert neither.status_code == 422


def test_promoting_the_review_aids_shortest_traces(team):
    api = Api(team.author)
    for which, expect in (("violating", "violate"), ("satisfying", "comply")):
        answer = api.post(cases_url(team), {"from_trace": {"version": 1, "which": which}})
        assert answer.status_code == 201, answer.content
        assert answer.json()["expect"] == expect and answer.json()["result"]["passed"]


def test_data_atoms_in_a_promoted_trace_get_values():
    team = make_team("data")
    version = add_rule(team, "big", "G(data.amount > 1000 -> F approved)")
    answer = Api(team.author).post(f"data/rules/{version.rule_id}/cases",
                                   {"from_trace": {"version": 1, "which": "violating"}})
    assert answer.status_code == 201, answer.content
    assert answer.json()["steps"][0]["data"]["data.amount"] > 1000
    assert answer.json()["result"]["passed"]


def test_a_new_version_is_checked_on_save_and_blocked_until_the_case_changes(team):
    api = Api(team.author)
    case = api.post(cases_url(team), {"name": "take at the end violates", "expect": "violate",
                                      "at_step": 1, "steps": [[], ["take"]]}).json()
    # The new version uses WX: a take at the last step no longer violates.
    made = api.post(f"cases/rules/{team.rule.id}/versions",
                    {"formula": "G(take -> WX examine)"})
    assert made.status_code == 201, made.content
    checked = AuditLogEntry.objects.filter(action="rule_version.cases_checked").last()
    assert checked.details["failing"][0]["name"] == "take at the end violates"
    assert checked.details["failing"][0]["differs_at"] == 1

    review = Client()
    review.force_login(team.reviewer)
    aids = review.get(f"/api/w/cases/rules/{team.rule.id}/versions/2/review").json()
    assert aids["cases_summary"]["passed"] == 0
    assert aids["cases"][0]["differs_at"] == 1 and not aids["cases"][0]["passed"]

    ack = {"acknowledgement": "labelers for take and examine will be added"}
    refused = api.post(f"cases/rules/{team.rule.id}/versions/2/submit", ack)
    assert refused.status_code == 400
    assert refused.json()["field"] == "cases"
    assert "step 1" in refused.json()["detail"]
    assert RuleVersion.objects.get(rule=team.rule, number=2).status == "draft"

    changed = api.patch(f"{cases_url(team)}/{case['id']}",
                        {"expect": "comply", "reason": "WX: the last step may take"})
    assert changed.status_code == 200, changed.content
    assert changed.json()["changes"][0]["changed"]["expect"] == ["violate", "comply"]
    assert changed.json()["result"]["passed"]
    entry = AuditLogEntry.objects.get(action="rule_case.changed")
    assert entry.details["reason"] == "WX: the last step may take"
    submitted = api.post(f"cases/rules/{team.rule.id}/versions/2/submit", ack)
    assert submitted.status_code == 200, submitted.content
    assert submitted.json()["status"] == "in_review"


def test_a_promoted_trace_with_prev_gets_the_review_aids_event_values():
    team = make_team("prev")
    version = add_rule(team, "rises", "G(data.amount > prev(data.amount) -> F approved)")
    answer = Api(team.author).post(f"prev/rules/{version.rule_id}/cases",
                                   {"from_trace": {"version": 1, "which": "violating"}})
    assert answer.status_code == 201, answer.content
    assert all("data.amount" in step["data"] for step in answer.json()["steps"])
    assert answer.json()["result"]["passed"]
