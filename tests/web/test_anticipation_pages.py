"""The session page's lanes say when a rule's verdict became certain, and why (issue 17)."""

from __future__ import annotations

import pytest

from tests.audits.helpers import add_rule, add_sessions, make_team
from tests.web.test_session_pages import client_of, session_id, start  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(db):
    team = make_team("acme")
    add_rule(team, "granted_after_request", "G(grant -> O request)")
    add_rule(team, "refund_owed", "F refund & G(pay -> G !refund)")
    add_sessions(team, {"a": [{"labels": ["request"]}, {"labels": ["pay"]}, {"labels": []}]})
    return team


def test_lanes_show_the_step_a_verdict_became_certain(team, start):  # noqa: F811
    run = start(team)
    page = client_of(team.auditor).get(
        f"/w/acme/sessions/{session_id(team, 'a')}/", {"run": run.id}).content.decode()
    assert "permanently satisfied, certain since step 0" in page
    assert "permanently violated, certain since step 1: no continuation can satisfy it" in page
