"""Invitations through real HTTP: an admin invites by email (API and Members page), the link
works once for seven days, revoking stops it, and the person lands signed in with the roles."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from studio.workspaces.models import AuditLogEntry, Invitation, Membership, hash_token
from tests.api.world import Api

STRONG = "plum orchard 1977"


def _invite(world, email="sam@example.com", roles=("auditor",), by="ann"):
    answer = world.as_(by).post("w/acme/invitations", {"email": email, "roles": list(roles)})
    assert answer.status_code == 201, answer.content
    return answer.json()


def _path(invite: dict) -> str:
    return invite["invite_url"].removeprefix("http://testserver")


def _join(path: str, username="sam", password=STRONG, again=None, client=None):
    client = client or Client()
    answer = client.post(path, {"username": username, "password1": password,
                                "password2": password if again is None else again})
    return client, answer


def _log(action: str) -> list[dict]:
    return list(AuditLogEntry.objects.filter(action=action).order_by("id")
                .values("actor__username", "details"))


# --- the API ---------------------------------------------------------------------------------

def test_an_admin_invites_lists_and_the_link_is_stored_only_as_a_hash(world):
    invite = _invite(world, roles=["reviewer", "auditor", "auditor"])
    assert invite["roles"] == ["auditor", "reviewer"] and invite["invited_by"] == "ann"
    assert invite["invite_url"].startswith("http://testserver/invitations/")
    token = _path(invite).split("/")[2]
    stored = Invitation.objects.get()
    assert stored.digest == hash_token(token)
    assert token not in str(Invitation.objects.values().get())
    days = (stored.expires_at - stored.created_at).total_seconds() / 86400
    assert 6.99 < days <= 7

    listed = world.as_("ann").get("w/acme/invitations").json()
    assert [(i["id"], i["email"], i["roles"]) for i in listed] == [
        (invite["id"], "sam@example.com", ["auditor", "reviewer"])]
    assert "invite_url" not in listed[0]
    assert _log("invitation.created") == [{"actor__username": "ann", "details": {
        "email": "sam@example.com", "roles": ["auditor", "reviewer"]}}]


def test_roles_and_email_are_checked_like_the_members_api(world):
    ann = world.as_("ann")
    unknown = ann.post("w/acme/invitations", {"email": "sam@example.com", "roles": ["boss"]})
    assert unknown.status_code == 422 and unknown.json()["field"] == "roles"
    none = ann.post("w/acme/invitations", {"email": "sam@example.com", "roles": []})
    assert none.status_code == 422 and none.json()["field"] == "roles"
    bad = ann.post("w/acme/invitations", {"email": "not an address", "roles": ["auditor"]})
    assert bad.status_code == 422 and bad.json()["field"] == "email"
    assert not Invitation.objects.exists()


def test_only_admins_invite_and_outsiders_learn_nothing(world):
    body = {"email": "sam@example.com", "roles": ["auditor"]}
    for name in ("alice", "rob", "aud"):
        assert world.as_(name).post("w/acme/invitations", body).status_code == 403
        assert world.as_(name).get("w/acme/invitations").status_code == 403
    assert world.as_("oscar").post("w/acme/invitations", body).status_code == 404
    assert world.as_("oscar").get("w/acme/invitations").status_code == 404
    invite = _invite(world)
    assert world.as_("oscar").delete(f"w/acme/invitations/{invite['id']}").status_code == 404
    assert world.as_("aud").delete(f"w/acme/invitations/{invite['id']}").status_code == 403
    # An invitation of another workspace is not found through this one.
    assert world.as_("oscar").delete(f"w/beta/invitations/{invite['id']}").status_code == 404
    assert Api().get("w/acme/invitations").status_code == 401
    assert Invitation.objects.get().revoked_at is None


def test_a_revoked_link_no_longer_works(world):
    invite = _invite(world)
    ann = world.as_("ann")
    assert ann.delete(f"w/acme/invitations/{invite['id']}").status_code == 204
    assert ann.delete(f"w/acme/invitations/{invite['id']}").status_code == 204  # idempotent
    assert ann.get("w/acme/invitations").json() == []
    page = Client().get(_path(invite))
    assert page.status_code == 410 and "withdrew it" in page.content.decode()
    _, answer = _join(_path(invite))
    assert answer.status_code == 410
    assert not get_user_model().objects.filter(username="sam").exists()
    assert _log("invitation.revoked") == [{"actor__username": "ann", "details": {
        "email": "sam@example.com", "roles": ["auditor"]}}]


# --- the link --------------------------------------------------------------------------------

def test_a_newcomer_accepts_once_and_lands_signed_in_in_the_workspace(world):
    invite = _invite(world, roles=["author", "auditor"])
    page = Client().get(_path(invite))
    html = page.content.decode()
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    assert "Join Acme" in html and "sam@example.com" in html and "Rule author" in html

    client, answer = _join(_path(invite))
    assert answer.status_code == 302 and answer["Location"] == "/w/acme/"
    sam = get_user_model().objects.get(username="sam")
    assert sam.email == "sam@example.com" and sam.check_password(STRONG)
    assert set(Membership.objects.filter(workspace=world.acme, user=sam)
               .values_list("role", flat=True)) == {"author", "auditor"}
    assert "Welcome, sam" in client.get("/w/acme/").content.decode()
    assert _log("invitation.accepted") == [{"actor__username": "sam", "details": {
        "email": "sam@example.com", "roles": ["auditor", "author"], "user": "sam"}}]
    assert world.as_("ann").get("w/acme/invitations").json() == []

    # Used once: a second opening, and a second account, are refused.
    again = Client().get(_path(invite))
    assert again.status_code == 410 and "used already" in again.content.decode()
    _, second = _join(_path(invite), username="sam2")
    assert second.status_code == 410
    assert not get_user_model().objects.filter(username="sam2").exists()
    assert world.as_("ann").delete(f"w/acme/invitations/{invite['id']}").status_code == 409


def test_an_expired_link_says_so(world):
    invite = _invite(world)
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    page = Client().get(_path(invite))
    assert page.status_code == 410 and "expired" in page.content.decode()
    _, answer = _join(_path(invite))
    assert answer.status_code == 410
    assert world.as_("ann").get("w/acme/invitations").json() == []


def test_a_link_that_never_was_one_is_404_without_a_trace(world):
    for path in ("/invitations/nonsense/", "/invitations/" + "A" * 43 + "/"):
        page = Client().get(path)
        assert page.status_code == 404
        assert "not valid" in page.content.decode() and "Traceback" not in page.content.decode()


def test_weak_passwords_taken_names_and_typos_are_refused_keeping_the_username(world):
    invite = _invite(world)
    _, weak = _join(_path(invite), password="password")
    html = weak.content.decode()
    assert weak.status_code == 422 and "too common" in html and 'value="sam"' in html
    _, typo = _join(_path(invite), again=STRONG + "x")
    assert typo.status_code == 422 and "differ" in typo.content.decode()
    _, taken = _join(_path(invite), username="Alice")
    assert taken.status_code == 409 and "taken" in taken.content.decode()
    _, odd = _join(_path(invite), username="sam smith")
    assert odd.status_code == 422 and 'value="sam smith"' in odd.content.decode()
    assert not get_user_model().objects.filter(username__startswith="sam").exists()
    assert Invitation.objects.get().accepted_at is None  # still usable
    _, ok = _join(_path(invite))
    assert ok.status_code == 302


def test_someone_signed_in_adds_the_roles_to_their_account(world):
    invite = _invite(world, roles=["reviewer", "auditor"])
    aud = Client()
    aud.force_login(world.aud)
    page = aud.get(_path(invite)).content.decode()
    assert "You are signed in as <strong>aud</strong>" in page and "adds these roles" in page
    answer = aud.post(_path(invite), {"as": "me"})
    assert answer.status_code == 302 and answer["Location"] == "/w/acme/"
    assert set(Membership.objects.filter(workspace=world.acme, user=world.aud)
               .values_list("role", flat=True)) == {"auditor", "reviewer"}
    # An outsider of acme joins it the same way.
    other = _invite(world, email="oscar@example.com", roles=["author"])
    oscar = Client()
    oscar.force_login(world.oscar)
    assert oscar.post(_path(other), {"as": "me"}).status_code == 302
    assert oscar.get("/w/acme/").status_code == 200


# --- the Members page ------------------------------------------------------------------------

def _page(world, name: str) -> Client:
    client = Client()
    client.force_login(world.users[name])
    return client


def test_the_members_page_invites_shows_the_link_once_and_revokes(world):
    ann = _page(world, "ann")
    refused = ann.post("/w/acme/invitations/", {"email": "sam@", "roles": ["auditor"]})
    assert refused.status_code == 422 and 'value="sam@"' in refused.content.decode()
    created = ann.post("/w/acme/invitations/", {"email": "sam@example.com",
                                                 "roles": ["auditor"]})
    html = created.content.decode()
    assert created.status_code == 201 and "no-store" in created["Cache-Control"]
    assert 'id="invite-link" class="secret-value" value="http://testserver/invitations/' in html
    link = html.split('id="invite-link" class="secret-value" value="')[1].split('"')[0]
    listing = ann.get("/w/acme/members/").content.decode()
    assert "sam@example.com" in listing and link not in listing

    invitation = Invitation.objects.get()
    assert _page(world, "aud").post(f"/w/acme/invitations/{invitation.id}/revoke"
                                    ).status_code == 403
    assert _page(world, "oscar").post(f"/w/acme/invitations/{invitation.id}/revoke"
                                      ).status_code == 404
    assert _page(world, "aud").post("/w/acme/invitations/", {
        "email": "x@example.com", "roles": ["admin"]}).status_code == 403
    assert ann.post(f"/w/acme/invitations/{invitation.id}/revoke").status_code == 302
    assert Client().get(link.removeprefix("http://testserver")).status_code == 410


# --- webhook secret names --------------------------------------------------------------------

def test_secrets_made_before_names_existed_are_numbered_per_workspace(world):
    import importlib

    from django.apps import apps

    from studio.workspaces.models import WebhookSecret

    migration = importlib.import_module(
        "studio.workspaces.migrations.0008_invitations_and_secret_names")
    for workspace in (world.acme, world.beta, world.acme):
        WebhookSecret.objects.create(workspace=workspace, name="", secret="whsec_x")
    migration.name_existing_secrets(apps, None)
    assert list(WebhookSecret.objects.order_by("id").values_list("workspace__slug", "name")) == [
        ("acme", "secret 1"), ("beta", "secret 1"), ("acme", "secret 2")]
