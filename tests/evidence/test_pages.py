"""The review page's test cases: added by hand, promoted in one click, run against the selected
version, a failing one blocking submission on the rule page; library rules arrive with cases."""

from __future__ import annotations

import pytest
from django.test import Client

from studio.evidence.models import RuleCase
from studio.rules import library as rule_library
from studio.rules import services as rules
from studio.rules.models import Rule
from tests.audits.helpers import add_rule, add_sessions

pytestmark = pytest.mark.django_db


@pytest.fixture
def team_slug():
    return "pages"


@pytest.fixture
def team(team):
    team.version = add_rule(team, "examine_taken", "G(take -> X examine)")
    team.rule = team.version.rule
    return team


def page(user):
    c = Client()
    c.force_login(user)
    return c


def test_cases_added_and_promoted_on_the_page(team):
    c = page(team.author)
    url = f"/w/pages/rules/{team.rule.id}/cases?v=1"
    added = c.post(url, {"action": "add", "name": "take then look", "expect": "violate",
                         "at_step": "1", "table": "take\n-"})
    assert added.status_code == 302
    refused = c.post(url, {"action": "add", "name": "bad", "expect": "comply",
                           "table": "take\ndrop"}, headers={"HX-Request": "true"})
    assert refused.status_code == 422
    assert "steps[1].atoms" in refused.content.decode()
    promoted = c.post(url, {"action": "promote", "which": "satisfying"})
    assert promoted.status_code == 302
    assert RuleCase.objects.filter(rule=team.rule).count() == 2
    shown = c.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "passes all 2 test cases" in shown
    full = c.get(url)
    assert full.status_code == 200 and "<h1>Test cases: examine_taken, version 1</h1>" in (
        full.content.decode())
    aids = c.get(f"/w/pages/rules/{team.rule.id}/review-aids?v=1",
                 headers={"HX-Request": "true"}).content.decode()
    assert 'name="which" value="violating"' in aids  # one click from the review aids
    detail = c.get(f"/w/pages/rules/{team.rule.id}/?v=1").content.decode()
    assert f"/w/pages/rules/{team.rule.id}/cases?v=1" in detail
    assert page(team.outsider).get(url).status_code == 404
    assert page(team.auditor).post(url, {"action": "promote",
                                         "which": "violating"}).status_code == 403


def test_a_failing_case_blocks_submission_on_the_rule_page(team):
    RuleCase.objects.create(rule=team.rule, name="take at the end", expect="violate",
                            steps=[{"atoms": [], "data": {}}, {"atoms": ["take"], "data": {}}])
    v2 = rules.new_version(team.rule, team.author, "G(take -> WX examine)")
    c = page(team.author)
    shown = c.get(f"/w/pages/rules/{team.rule.id}/cases?v=2",
                  headers={"HX-Request": "true"}).content.decode()
    assert "fails 1 of 1 test case" in shown and "differs at step 1" in shown
    answer = c.post(f"/w/pages/rules/{team.rule.id}/?v=2",
                    {"action": "submit", "formula": v2.formula,
                     "acknowledgement": "labelers come later"})
    assert answer.status_code == 400
    assert "fails 1 of its 1 test case" in answer.content.decode()
    v2.refresh_from_db()
    assert v2.status == "draft"


def test_library_rules_come_with_their_cases(team):
    rule_library.install_library(team.workspace, team.author, "textworld")
    rule = Rule.objects.get(workspace=team.workspace, name="take_then_examine")
    cases = list(RuleCase.objects.filter(rule=rule))
    assert {c.expect for c in cases} == {"violate", "comply"}
    assert all(c.source == {"kind": "library"} for c in cases)
    from studio.evidence.services import check_version

    version = rule.versions.get()
    assert all(r["passed"] for r in check_version(version))


def test_a_case_from_a_session_picked_by_name_and_an_unknown_name_keeps_the_input(team):
    add_sessions(team, {"chat-7": [{"labels": ["take"]}, {"labels": ["examine"]}]})
    c = page(team.author)
    url = f"/w/pages/rules/{team.rule.id}/cases?v=1"
    shown = c.get(url).content.decode()
    assert 'list="case-session-names"' in shown and '<option value="chat-7">' in shown
    typed = {"action": "from_session", "session": "chat-8", "from_step": "0", "to_step": "1",
             "expect": "comply"}
    refused = c.post(url, typed)
    assert refused.status_code == 422
    body = refused.content.decode()
    assert 'id="case-session-error"' in body and "no session named &#x27;chat-8&#x27;" in body
    assert 'value="chat-8"' in body and 'name="to_step" size="4" value="1"' in body
    assert '<option value="comply" selected>comply</option>' in body
    taken = c.post(url, {**typed, "session": "chat-7"})
    assert taken.status_code == 302
    case = RuleCase.objects.get(rule=team.rule)
    assert case.source["session"] == "chat-7" and case.expect == "comply"
