"""The acting user: one answer for a request, an API actor, a token (its creator), a user, None.

The upload test goes through real HTTP: a token's upload used to record no uploader.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, RequestFactory

from studio.traces.models import Upload
from studio.workspaces import services as ws
from studio.workspaces.acting import Actor, acting_token, acting_user
from studio.workspaces.models import AuditLogEntry, Role


@pytest.fixture
def team(db):
    ann = ws.create_user("ann-acting")
    workspace = ws.create_workspace("Acting", owner=ann, slug="acting")
    token, secret = ws.create_token(workspace, "ci", [Role.AUDITOR], ann)
    return workspace, ann, token, secret


def test_an_upload_made_with_a_token_records_its_creator_as_uploader(team, settings, tmp_path,
                                                                     django_capture_on_commit_callbacks):
    workspace, ann, token, secret = team
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    client = Client(headers={"Authorization": f"Bearer {secret}"})
    body = {"file": SimpleUploadedFile("log.jsonl", b'{"session": "s1", "event": "start"}\n'),
            "format": "jsonl"}
    with django_capture_on_commit_callbacks(execute=False):
        answer = client.post("/api/w/acting/uploads", data=body)
    assert answer.status_code in (201, 202), answer.content
    upload = Upload.objects.get(workspace=workspace)
    assert upload.uploaded_by == ann
    # The audit log still names the token that acted, not the person behind it.
    entry = AuditLogEntry.objects.get(workspace=workspace, action="upload.created")
    assert entry.actor_token == token and entry.actor is None


def test_an_upload_by_a_signed_in_person_records_that_person(team, settings, tmp_path,
                                                             django_capture_on_commit_callbacks):
    workspace, ann, _, _ = team
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    client = Client()
    client.force_login(ann)
    body = {"file": SimpleUploadedFile("log.jsonl", b'{"session": "s1", "event": "start"}\n'),
            "format": "jsonl"}
    with django_capture_on_commit_callbacks(execute=False):
        answer = client.post("/api/w/acting/uploads", data=body)
    assert answer.status_code in (201, 202), answer.content
    assert Upload.objects.get(workspace=workspace).uploaded_by == ann
    entry = AuditLogEntry.objects.get(workspace=workspace, action="upload.created")
    assert entry.actor == ann and entry.actor_token is None


def test_each_kind_of_actor(team):
    _, ann, token, _ = team
    assert acting_user(None) is None
    assert acting_user(ann) == ann
    assert acting_user(AnonymousUser()) is None
    assert acting_user(Actor(user=ann)) == ann
    assert acting_user(Actor()) is None
    # A token acts for the person who made it, unless only a person signed in counts.
    assert acting_user(token) == ann
    assert acting_user(Actor(token=token)) == ann
    assert acting_user(token, through_token=False) is None
    assert acting_user(Actor(token=token), through_token=False) is None
    assert acting_user(Actor(user=ann), through_token=False) == ann
    assert acting_token(Actor(token=token)) == token
    assert acting_token(token) == token
    assert acting_token(Actor(user=ann)) is None
    assert acting_token(ann) is None
    assert acting_token(None) is None


def test_an_unsaved_user_acts_as_nobody(db):
    from django.contrib.auth import get_user_model

    assert acting_user(get_user_model()(username="ghost")) is None


def test_a_token_without_a_creator_acts_for_nobody(team):
    _, _, token, _ = team
    type(token).objects.filter(pk=token.pk).update(created_by=None)  # what SET_NULL leaves
    token.refresh_from_db()
    assert acting_user(token) is None
    assert acting_token(token) == token


def test_a_request(team):
    _, ann, token, _ = team
    factory = RequestFactory()
    page = factory.get("/")
    page.user = ann
    assert acting_user(page) == ann and acting_token(page) is None
    anonymous = factory.get("/")
    anonymous.user = AnonymousUser()
    assert acting_user(anonymous) is None
    api = factory.get("/")
    api.user = AnonymousUser()
    api.auth = Actor(token=token)  # what the API's token auth leaves on the request
    assert acting_user(api) == ann and acting_token(api) == token
    assert acting_user(api, through_token=False) is None
