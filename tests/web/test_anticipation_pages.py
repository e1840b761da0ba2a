"""The session page's lanes say when a rule's verdict became certain, and why (issue 17)."""

from __future__ import annotations

import pytest

from tests.audits.helpers import add_rule, add_sessions
from tests.web.test_session_pages import client_of, session_id, start  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(team):
    add_rule(team, "granted_after_request", "G(grant -> O request)")
    add_rule(team, "refund_owed", "F refund & G(pay -> G !refund)")
    add_sessions(team, {"a": [{"labels": ["request"]}, {"labels": ["pay"]}, {"labels": []}]})
    return team


def test_lanes_show_the_step_a_verdict_became_certain(team, start):  # noqa: F811
    run = start(team)
    page = client_of(team.auditor).get(
        f"/w/acme/sessions/{session_id(team, 'a')}/", {"run": run.id}).content.decode()
    assert "met for good, certain since step 0" in page
    assert "broken for good, certain since step 1: nothing the agent does later can meet it" in page


def test_the_live_page_says_which_verdicts_are_certain(django_user_model):
    from studio.live.ingest import clear_caches
    from studio.workspaces import services as workspace_services
    from tests.live.conftest import Agent, approve

    clear_caches()
    owner = django_user_model.objects.create_user(username="owner", password="pw-owner-123")
    workspace = workspace_services.create_workspace("Acme", owner=owner, slug="acme")
    approve(workspace, owner, "refund_owed",
            "F tool_call:refund & G(tool_call:pay -> G !tool_call:refund)")
    approve(workspace, owner, "no_delete", "G !tool_call:delete")
    _, token = workspace_services.create_token(workspace, "agent", ["auditor"], by=owner)
    agent = Agent("acme", token=token)
    assert agent.post("s1", [{"event_id": "e1", "output": {"tool": "pay"}}]).status_code == 200
    page = client_of(owner).get("/w/acme/live/").content.decode()
    clear_caches()
    assert "Broken for good: nothing the agent does later can meet it" in page
    assert "Met so far: met if the session ended now" in page
