"""Workspaces, callers and upload helpers for the traces tests.

``acme`` has an auditor (a token) and a person with every role; ``beta`` belongs to someone else
whose token is the outsider.  Uploaded files go to a temporary UPLOAD_ROOT.  Parsing runs in the
request's on-commit hook (no broker in tests), so helpers run those hooks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from studio.workspaces import services as ws
from studio.workspaces.models import Role


@dataclass
class Caller:
    client: Client
    slug: str
    capture: object

    def upload(self, content: bytes | Path, format: str, options: dict | None = None,
               name: str | None = None, slug: str | None = None):
        if isinstance(content, Path):
            name = name or content.name
            content = content.read_bytes()
        body = {"file": SimpleUploadedFile(name or "log.jsonl", content), "format": format}
        if options is not None:
            body["options"] = json.dumps(options)
        with self.capture(execute=True):
            return self.client.post(f"/api/w/{slug or self.slug}/uploads", data=body)

    def get(self, path: str, slug: str | None = None, **params):
        return self.client.get(f"/api/w/{slug or self.slug}/{path}", params)


@pytest.fixture
def upload_root(tmp_path, settings):
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    return settings.UPLOAD_ROOT


@pytest.fixture
def acme(db):
    owner = ws.create_user("owner-acme")
    return ws.create_workspace("Acme", owner=owner, slug="acme")


@pytest.fixture
def beta(db):
    owner = ws.create_user("owner-beta")
    return ws.create_workspace("Beta", owner=owner, slug="beta")


def _token_client(workspace, roles) -> Client:
    # Made by the workspace's owner, who holds every role (a token acts with its creator's).
    _, secret = ws.create_token(workspace, "test", roles, workspace.memberships.first().user)
    return Client(headers={"Authorization": f"Bearer {secret}"})


@pytest.fixture
def auditor(acme, upload_root, django_capture_on_commit_callbacks) -> Caller:
    return Caller(_token_client(acme, [Role.AUDITOR]), "acme", django_capture_on_commit_callbacks)


@pytest.fixture
def author(acme, upload_root, django_capture_on_commit_callbacks) -> Caller:
    return Caller(_token_client(acme, [Role.AUTHOR]), "acme", django_capture_on_commit_callbacks)


@pytest.fixture
def person(acme, upload_root, django_capture_on_commit_callbacks) -> Caller:
    client = Client()
    client.force_login(acme.memberships.first().user)
    return Caller(client, "acme", django_capture_on_commit_callbacks)


@pytest.fixture
def outsider(beta, upload_root, django_capture_on_commit_callbacks) -> Caller:
    return Caller(_token_client(beta, [Role.AUDITOR, Role.AUTHOR, Role.REVIEWER]), "beta",
                  django_capture_on_commit_callbacks)
