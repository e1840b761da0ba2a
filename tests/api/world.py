"""People, workspaces and HTTP clients shared by the API, rules and workspaces tests.

Workspace ``acme`` has an author, a reviewer, a second reviewer, an auditor and someone with all
three roles; ``beta`` is another workspace whose member (the outsider) belongs to nothing in acme.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from django.test import Client

from studio.workspaces import services as ws
from studio.workspaces.models import Role, Workspace


class Api:
    """A JSON client for /api/ as one caller: a bearer token, a signed-in person, or nobody."""

    def __init__(self, token: str | None = None, user=None, enforce_csrf: bool = False):
        self.client = Client(enforce_csrf_checks=enforce_csrf)
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        if user is not None:
            self.client.force_login(user)

    def call(self, method: str, path: str, body=None, **headers):
        url = path if path.startswith("/") else f"/api/{path}"
        kwargs = {"headers": {**self.headers, **headers}}
        if body is not None:
            kwargs["data"] = json.dumps(body)
            kwargs["content_type"] = "application/json"
        return getattr(self.client, method.lower())(url, **kwargs)

    def get(self, path, **headers):
        return self.call("GET", path, **headers)

    def post(self, path, body=None, **headers):
        return self.call("POST", path, body if body is not None else {}, **headers)

    def patch(self, path, body=None, **headers):
        return self.call("PATCH", path, body if body is not None else {}, **headers)

    def put(self, path, body=None, **headers):
        return self.call("PUT", path, body if body is not None else {}, **headers)

    def delete(self, path, **headers):
        return self.call("DELETE", path, **headers)


@dataclass
class World:
    acme: Workspace
    beta: Workspace
    users: dict = field(default_factory=dict)

    def __getattr__(self, name):
        try:
            return self.users[name]
        except KeyError:
            raise AttributeError(name) from None

    def as_(self, name: str, **kwargs) -> Api:
        return Api(user=self.users[name], **kwargs)

    def token(self, workspace: Workspace, roles=tuple(Role.values), by: str | None = None,
              name: str = "machine") -> str:
        """A token made by ``by`` (by default the workspace's owner, who holds every role)."""
        creator = self.users[by] if by else workspace.memberships.order_by("id").first().user
        _, secret = ws.create_token(workspace, name, list(roles), creator)
        return secret


def make_world() -> World:
    # No passwords: the tests sign people in with force_login, and hashing is slow.
    users = {name: ws.create_user(name) for name in ("alice", "rob", "rita", "aud", "ann",
                                                      "oscar")}
    acme = ws.create_workspace("Acme", slug="acme", owner=users["ann"])
    for name, role in (("alice", Role.AUTHOR), ("rob", Role.REVIEWER), ("rita", Role.REVIEWER),
                       ("aud", Role.AUDITOR)):
        ws.add_member(acme, users[name], role)
    beta = ws.create_workspace("Beta", slug="beta", owner=users["oscar"])
    return World(acme=acme, beta=beta, users=users)


@pytest.fixture
def world(db) -> World:
    return make_world()
