"""A session's lanes in the API carry the anticipatory verdict (issue 17): complete,
complete_step and a reason, for the rule's formula over the whole session."""

from __future__ import annotations

import pytest

from .helpers import add_rule, add_sessions
from .test_api import Api, run_tasks, sid  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(team):
    add_rule(team, "granted_after_request", "G(grant -> O request)")
    add_rule(team, "refund_owed", "F refund & G(pay -> G !refund)")
    add_rule(team, "logs_out", "F logout")
    add_sessions(team, {
        "a": [{"labels": ["request"]}, {"labels": ["pay"]}, {"labels": ["grant"]}],
    })
    return team


def test_lanes_say_when_the_verdict_became_certain(team, run_tasks):  # noqa: F811
    with run_tasks():
        audit = Api(team.auditor).post("acme/audits").json()
    body = Api(team.auditor).get(f"acme/audits/{audit['id']}/sessions/{sid(team, 'a')}").json()
    lanes = {lane["rule"]: lane for lane in body["rules"]}
    # TRAC leaves both open; no continuation can change either verdict.
    assert lanes["granted_after_request"]["verdict"] == "open"
    assert (lanes["granted_after_request"]["complete"],
            lanes["granted_after_request"]["complete_step"]) == ("permanently_complied", 0)
    assert lanes["granted_after_request"]["complete_was"] == "permanently_satisfied"
    assert lanes["refund_owed"]["verdict"] == "open"
    assert (lanes["refund_owed"]["complete"], lanes["refund_owed"]["complete_step"]) == (
        "permanently_violated", 1)
    assert lanes["refund_owed"]["complete_reason"].startswith("nothing the agent does later can meet it")
    # The uploaded session has ended: its last step (2) settles what was not certain yet.
    assert (lanes["logs_out"]["complete"], lanes["logs_out"]["complete_step"]) == (
        "permanently_violated", 2)
    assert lanes["logs_out"]["complete_reason"] == "the session ended without meeting it"
