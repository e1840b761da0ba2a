"""Fixtures for live ingestion: a workspace with approved rules, a token, webhook secrets, and
helpers that post events the way an agent does."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from django.test import Client

from studio.live.ingest import clear_caches
from studio.live.intake import sign
from studio.rules.models import Rule, RuleVersion, VersionStatus
from studio.workspaces import services as workspace_services
from studio.workspaces.models import Workspace

RULES = [
    ("pay_before_ship", "!tool_call:ship W tool_call:pay"),
    ("big_needs_approval", "G(output.args.amount > 10000 -> F approved)"),
    ("no_delete", "G !tool_call:delete"),
    ("ends", 'F "stop_reason:end_turn"'),
]


def approve(workspace: Workspace, author, name: str, formula: str) -> RuleVersion:
    """A rule with one approved version (or a new approved version of an existing rule)."""
    rule, _ = Rule.objects.get_or_create(workspace=workspace, name=name)
    number = rule.versions.count() + 1
    return RuleVersion.objects.create(rule=rule, number=number, formula=formula,
                                      status=VersionStatus.APPROVED, author=author)


@pytest.fixture(autouse=True)
def _fresh_caches():
    clear_caches()
    yield
    clear_caches()


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user(username="owner", password="pw-owner-123")


@pytest.fixture
def workspace(owner):
    ws = workspace_services.create_workspace("Acme", owner=owner, slug="acme")
    for name, formula in RULES:
        approve(ws, owner, name, formula)
    return ws


@pytest.fixture
def token(workspace, owner):
    _, secret = workspace_services.create_token(workspace, "agent", ["auditor"], by=owner)
    return secret


@pytest.fixture
def secret(workspace, owner):
    return workspace_services.create_webhook_secret(workspace, "payments agent",
                                                     by=owner).secret


class Agent:
    """Posts like a live agent: JSON bodies, a bearer token or a Standard Webhooks signature."""

    def __init__(self, slug: str, token: str | None = None, secret: str | None = None):
        self.client = Client()
        self.slug = slug
        self.token = token
        self.secret = secret

    def url(self, session: str, what: str = "events") -> str:
        return f"/api/w/{self.slug}/live/sessions/{session}/{what}"

    def post(self, session: str, events: list, what: str = "events", *, body: bytes | None = None,
             headers: dict | None = None, signed: bool | None = None, msg_id: str | None = None,
             stamp: int | None = None):
        key = "events" if what == "events" else "candidates"
        body = body if body is not None else json.dumps({key: events}).encode()
        extra = dict(headers or {})
        use_signature = signed if signed is not None else self.token is None
        if use_signature:
            msg_id = msg_id or f"msg_{uuid.uuid4().hex}"
            stamp = int(time.time()) if stamp is None else stamp
            extra.setdefault("webhook-id", msg_id)
            extra.setdefault("webhook-timestamp", str(stamp))
            extra.setdefault("webhook-signature", sign(self.secret, msg_id, stamp, body))
        elif self.token is not None:
            extra.setdefault("Authorization", f"Bearer {self.token}")
        return self.client.post(self.url(session, what), data=body,
                                content_type="application/json", headers=extra)
