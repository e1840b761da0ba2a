"""Members, roles and credentials through the API: admins manage people, everyone's tokens and
the webhook secrets; a token acts with the roles its creator holds now; the last admin stays."""

from __future__ import annotations

import json
import time

import pytest

import studio.workspaces.tokens as tokens
from studio.live.intake import sign
from studio.traces.models import TraceSession
from studio.workspaces.models import ApiToken, AuditLogEntry, Membership, WebhookSecret
from tests.api.world import Api

MEMBER_ROUTES = [("GET", "w/acme/members", None),
                 ("POST", "w/acme/members", {"username": "oscar", "roles": ["auditor"]}),
                 ("PUT", "w/acme/members/alice", {"roles": ["auditor"]}),
                 ("DELETE", "w/acme/members/alice", None)]


def _call(api: Api, method: str, path: str, body):
    return api.call(method, path, body)


def _roles(world, name: str) -> set[str]:
    return set(Membership.objects.filter(workspace=world.acme, user=world.users[name])
               .values_list("role", flat=True))


def test_an_admin_adds_changes_and_removes_a_member_and_the_log_says_so(world):
    ann = world.as_("ann")

    listed = ann.get("w/acme/members").json()
    assert [m["username"] for m in listed] == ["alice", "ann", "aud", "rita", "rob"]
    assert next(m for m in listed if m["username"] == "ann")["roles"] == [
        "admin", "auditor", "author", "reviewer"]

    added = ann.post("w/acme/members", {"username": "oscar", "roles": ["auditor", "author"]})
    assert added.status_code == 201, added.content
    assert added.json()["roles"] == ["auditor", "author"]
    changed = ann.put("w/acme/members/oscar", {"roles": ["reviewer"]})
    assert changed.status_code == 200 and changed.json()["roles"] == ["reviewer"]
    assert _roles(world, "oscar") == {"reviewer"}
    assert ann.delete("w/acme/members/oscar").status_code == 204
    assert _roles(world, "oscar") == set()

    log = [e for e in ann.get("w/acme/log").json()
           if e["action"].startswith("member.") and e["details"].get("user") == "oscar"]
    assert len(log) == 3 and {e["actor"] for e in log} == {"ann"}
    by_action = {e["action"]: e for e in log}
    assert by_action["member.added"]["details"] == {"user": "oscar",
                                                    "roles": ["auditor", "author"]}
    assert by_action["member.roles_changed"]["details"] == {
        "user": "oscar", "before": ["auditor", "author"], "after": ["reviewer"]}
    assert by_action["member.removed"]["details"] == {"user": "oscar", "roles": ["reviewer"]}


@pytest.mark.parametrize("method,path,body", MEMBER_ROUTES)
def test_an_outsider_gets_404_and_a_member_who_is_not_admin_403(world, method, path, body):
    before = sorted(Membership.objects.values_list("workspace_id", "user_id", "role"))

    assert _call(world.as_("oscar"), method, path, body).status_code == 404
    refused = _call(world.as_("aud"), method, path, body)
    assert refused.status_code == 403 and "admin" in refused.json()["detail"]
    # An auditor's token, likewise.
    token = Api(token=world.token(world.acme, roles=["auditor"], by="aud"))
    assert _call(token, method, path, body).status_code == 403

    assert sorted(Membership.objects.values_list("workspace_id", "user_id", "role")) == before


def test_the_last_admin_can_be_neither_removed_nor_demoted(world):
    ann = world.as_("ann")

    removed = ann.delete("w/acme/members/ann")
    assert removed.status_code == 409
    assert "last admin" in removed.json()["detail"]
    demoted = ann.put("w/acme/members/ann", {"roles": ["author"]})
    assert demoted.status_code == 409 and demoted.json()["field"] == "roles"
    assert "admin" in _roles(world, "ann")
    assert not AuditLogEntry.objects.filter(action__in=["member.removed",
                                                        "member.roles_changed"]).exists()

    # With a second admin, either may go.
    assert ann.put("w/acme/members/rob", {"roles": ["admin", "reviewer"]}).status_code == 200
    assert ann.put("w/acme/members/ann", {"roles": ["author"]}).status_code == 200
    assert world.as_("rob").delete("w/acme/members/ann").status_code == 204
    assert world.as_("rob").delete("w/acme/members/rob").status_code == 409


def test_bad_member_requests_name_their_field(world):
    ann = world.as_("ann")

    nobody = ann.post("w/acme/members", {"username": "nobody", "roles": ["auditor"]})
    assert nobody.status_code == 422 and nobody.json()["field"] == "username"
    again = ann.post("w/acme/members", {"username": "alice", "roles": ["auditor"]})
    assert again.status_code == 409 and "already a member" in again.json()["detail"]
    unknown = ann.post("w/acme/members", {"username": "oscar", "roles": ["owner"]})
    assert unknown.status_code == 422 and unknown.json()["field"] == "roles"
    none = ann.put("w/acme/members/alice", {"roles": []})
    assert none.status_code == 422 and "remove the member" in none.json()["detail"]
    assert ann.put("w/acme/members/oscar", {"roles": ["author"]}).status_code == 404
    assert ann.delete("w/acme/members/nobody").status_code == 404


def test_a_removed_members_token_stops_at_once_in_this_process(
        world, settings, django_capture_on_commit_callbacks):
    settings.TOKEN_CACHE_SECONDS = 60
    token = Api(token=world.token(world.acme, roles=["reviewer"], by="rob"))
    assert token.get("w/acme/rules").status_code == 200  # verified and cached

    with django_capture_on_commit_callbacks(execute=True):
        assert world.as_("ann").delete("w/acme/members/rob").status_code == 204

    refused = token.get("w/acme/rules")
    assert refused.status_code == 403
    assert "no roles" in refused.json()["detail"]


def test_other_processes_honour_a_removal_within_the_token_cache_window(world, settings,
                                                                        monkeypatch):
    settings.TOKEN_CACHE_SECONDS = 5
    token = Api(token=world.token(world.acme, roles=["reviewer"], by="rob"))
    assert token.get("w/acme/rules").status_code == 200

    # Removed through another server process: this one's cache is not cleared (the test's
    # transaction never commits, so no on-commit callback runs).
    assert world.as_("ann").delete("w/acme/members/rob").status_code == 204
    assert token.get("w/acme/rules").status_code == 200  # still cached, for at most 5 s
    clock = tokens.time.monotonic()
    monkeypatch.setattr(tokens.time, "monotonic", lambda: clock + 6)
    assert token.get("w/acme/rules").status_code == 403


def test_a_token_loses_a_role_its_creator_loses(world, settings):
    settings.TOKEN_CACHE_SECONDS = 0
    ann = world.as_("ann")
    assert ann.put("w/acme/members/rob", {"roles": ["reviewer", "auditor"]}).status_code == 200
    token = Api(token=world.token(world.acme, roles=["reviewer", "auditor"], by="rob"))
    assert token.get("w/").json()[0]["roles"] == ["auditor", "reviewer"]

    assert ann.put("w/acme/members/rob", {"roles": ["auditor"]}).status_code == 200

    assert token.get("w/").json()[0]["roles"] == ["auditor"]
    listed = ann.get("w/acme/tokens").json()
    row = next(t for t in listed if t["created_by"] == "rob")
    assert row["roles"] == ["auditor", "reviewer"] and row["acting_roles"] == ["auditor"]
    # Acting as an auditor only: starting an audit passes the role check, approving does not.
    assert token.post("w/acme/audits").status_code != 403
    rule = world.as_("alice").post("w/acme/rules", {"name": "r", "formula": "G !x"}).json()
    assert world.as_("alice").post(f"w/acme/rules/{rule['id']}/versions/1/submit",
                                   {"acknowledgement": "ok"}).status_code == 200
    approve = token.post(f"w/acme/rules/{rule['id']}/versions/1/approve")
    assert approve.status_code == 403


def _live_post(token: str, session: str = "s1"):
    body = json.dumps({"events": [{"output": {"tool": "ship"}}]}).encode()
    return Api(token=token).client.post(f"/api/w/acme/live/sessions/{session}/events",
                                        data=body, content_type="application/json",
                                        headers={"Authorization": f"Bearer {token}"})


def test_a_token_with_no_roles_can_do_nothing_not_even_post_live_events(world, settings):
    settings.TOKEN_CACHE_SECONDS = 0
    # A token made before tokens needed a role (the live tests used to make them so).
    secret, prefix, digest = ApiToken.generate()
    ApiToken.objects.create(workspace=world.acme, name="old agent", prefix=prefix,
                            digest=digest, roles=[], created_by=world.ann)

    live = _live_post(secret)
    assert live.status_code == 403, live.content
    assert "no roles" in live.json()["detail"]
    assert not TraceSession.objects.filter(workspace=world.acme).exists()
    assert Api(token=secret).get("w/acme/rules").status_code == 403
    otlp = Api(token=secret).client.post("/v1/traces", data='{"resourceSpans": []}',
                                         content_type="application/json",
                                         headers={"Authorization": f"Bearer {secret}"})
    assert otlp.status_code == 403
    # A token whose creator left acts with nothing either.
    kept = world.token(world.acme, roles=["auditor"], by="aud")
    assert _live_post(kept).status_code == 200
    world.as_("ann").delete("w/acme/members/aud")
    assert _live_post(kept, "s2").status_code == 403


def test_a_token_without_roles_is_not_created(world):
    answer = world.as_("aud").post("w/acme/tokens", {"name": "nothing", "roles": []})
    assert answer.status_code == 422 and answer.json()["field"] == "roles"
    admin_role = world.as_("aud").post("w/acme/tokens", {"name": "x", "roles": ["admin"]})
    assert admin_role.status_code == 403 and "admin" in admin_role.json()["detail"]
    too_long = world.as_("aud").post("w/acme/tokens", {"name": "n" * 101, "roles": ["auditor"]})
    assert too_long.status_code == 422 and too_long.json()["field"] == "name"


def test_only_admins_manage_others_tokens(world):
    aud, ann = world.as_("aud"), world.as_("ann")
    mine = aud.post("w/acme/tokens", {"name": "ci", "roles": ["auditor"]}).json()
    theirs = ann.post("w/acme/tokens", {"name": "ops", "roles": ["admin"]}).json()

    assert [t["name"] for t in aud.get("w/acme/tokens").json()] == ["ci"]
    assert {t["name"] for t in ann.get("w/acme/tokens").json()} == {"ci", "ops"}
    refused = aud.delete(f"w/acme/tokens/{theirs['id']}")
    assert refused.status_code == 403
    assert ApiToken.objects.get(pk=theirs["id"]).revoked_at is None
    assert aud.delete(f"w/acme/tokens/{mine['id']}").status_code == 204
    other = aud.post("w/acme/tokens", {"name": "ci2", "roles": ["auditor"]}).json()
    assert ann.delete(f"w/acme/tokens/{other['id']}").status_code == 204
    revocations = AuditLogEntry.objects.filter(action="token.revoked")
    assert sorted(e.actor.username for e in revocations) == ["ann", "aud"]
    # An auditor's token cannot list the workspace's tokens (nor manage any).
    token = Api(token=world.token(world.acme, ["auditor"], "aud"))
    assert token.get("w/acme/tokens").status_code == 403


def test_webhook_secrets_are_for_admins_only(world, settings):
    settings.TOKEN_CACHE_SECONDS = 0
    aud, ann = world.as_("aud"), world.as_("ann")
    assert aud.post("w/acme/webhook-secrets", {"name": "agent"}).status_code == 403
    assert aud.get("w/acme/webhook-secrets").status_code == 403
    # A secret is named after its sender (a blank name is refused: tests/workspaces/test_auth.py).
    created = ann.post("w/acme/webhook-secrets", {"name": "agent"})
    assert created.status_code == 201 and created.json()["name"] == "agent"
    secret = created.json()
    assert aud.delete(f"w/acme/webhook-secrets/{secret['id']}").status_code == 403
    assert WebhookSecret.objects.get(pk=secret["id"]).revoked_at is None
    assert world.as_("oscar").get("w/acme/webhook-secrets").status_code == 404
    assert [s["ending"] for s in ann.get("w/acme/webhook-secrets").json()] == [
        secret["secret"][-4:]]

    # The secret signs deliveries until an admin revokes it.
    body = json.dumps({"events": [{"output": {"tool": "ship"}}]}).encode()
    stamp = int(time.time())
    headers = {"webhook-id": "msg_1", "webhook-timestamp": str(stamp),
               "webhook-signature": sign(secret["secret"], "msg_1", stamp, body)}
    signed = Api().client.post("/api/w/acme/live/sessions/s/events", data=body,
                               content_type="application/json", headers=headers)
    assert signed.status_code == 200, signed.content
    assert ann.delete(f"w/acme/webhook-secrets/{secret['id']}").status_code == 204
    assert WebhookSecret.objects.get(pk=secret["id"]).revoked_at is not None
