"""Fixtures for the OpenTelemetry integrations (the owner and fresh caches: ../conftest.py): a workspace with rules over the refund conversation, a token
for its agent, and the stand-in OpenAI server."""

from __future__ import annotations

import pytest

from studio.rules.models import Rule, RuleVersion, VersionStatus
from studio.workspaces import services as workspace_services

from .standin_openai import StandInOpenAI

# Over the tool call's arguments (met: 20 <= 50) and over the order of tool calls (the refund
# comes without a lookup first: violated).
RULES = [
    ("refund_within_limit", "G(tool_call:refund -> output.args.amount <= 50)"),
    ("lookup_before_refund", "!tool_call:refund W tool_call:lookup_order"),
]


@pytest.fixture
def workspace(owner):
    ws = workspace_services.create_workspace("Acme", owner=owner, slug="acme")
    for name, formula in RULES:
        rule = Rule.objects.create(workspace=ws, name=name)
        RuleVersion.objects.create(rule=rule, number=1, formula=formula,
                                   status=VersionStatus.APPROVED, author=owner)
    return ws


@pytest.fixture
def token(workspace, owner):
    _, secret = workspace_services.create_token(workspace, "agent", ["auditor"], by=owner)
    return secret


@pytest.fixture
def openai_server():
    server = StandInOpenAI()
    yield server
    server.close()
