"""The guard blocks a step after which no continuation can satisfy a rule, even where
progression has not reached false (anticipation, issue 17)."""

from __future__ import annotations

import json

import pytest

from studio.live import anticipation as live_anticipation
from studio.monitor.anticipation import permanently_violated
from studio.monitor.session import RuleSet, SessionMonitor
from studio.workspaces import services as workspace_services
from tests.live.conftest import Agent, approve, owner, workspace  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

PAY = {"output": {"tool": "pay", "args": {"amount": 10}}}
LOOK = {"output": {"tool": "look", "args": {}}}
# A refund is owed, and none may follow a payment: after a payment the rule is lost for good,
# but progression leaves `F refund & G !refund`, which it never reduces to false.
REFUND_RULE = "F tool_call:refund & G(tool_call:pay -> G !tool_call:refund)"


def test_permanently_violated_without_django():
    ruleset = RuleSet([("refund", REFUND_RULE), ("ends", "F done")])
    monitor = SessionMonitor(ruleset)
    assert permanently_violated(monitor) == set()
    event = {"labels": ["tool_call:pay"]}
    monitor.feed(event)
    assert monitor.results()[0].verdict == "pending"  # progression has not decided
    assert permanently_violated(monitor, event) == {"refund"}


def test_a_step_that_dooms_a_rule_is_not_allowed(workspace, owner):  # noqa: F811
    approve(workspace, owner, "refund_owed", REFUND_RULE)
    # Its states are searched ahead, at approval (issue 27, item 4): a state still being
    # searched would be "not yet known" to the guard.
    assert live_anticipation.background().idle(60)
    _, secret = workspace_services.create_token(workspace, "agent", ["auditor"], by=owner)
    agent = Agent(workspace.slug, token=secret)

    def ask(body):
        return agent.client.post(agent.url("s1", "guard"), data=json.dumps(body).encode(),
                                 content_type="application/json",
                                 headers={"Authorization": f"Bearer {agent.token}"}).json()

    looked = ask({"event": LOOK})
    assert looked["decision"] == "allow", looked
    paid = ask({"event": PAY})
    assert paid["decision"] != "allow", paid
    assert "refund_owed" in [r["rule"] for r in paid["rules_at_risk"]]
