"""The Members, Tokens and Webhook secrets pages, the review queue and sign-in throttling,
through real requests."""

from __future__ import annotations

import re
import time

import pytest
from django.test import Client

from studio.workspaces.models import ApiToken, AuditLogEntry, Membership, WebhookSecret
from tests.api.world import Api, world  # noqa: F401

INLINE = re.compile(r"\sstyle\s*=|<script(?![^>]*\bsrc=)")


def _page(world, name: str) -> Client:
    client = Client()
    client.force_login(world.users[name])
    return client


def _labelled(html: str) -> None:
    """Every visible input and select has a label naming it."""
    for tag in re.findall(r"<(?:input|select)\b[^>]*>", html):
        if 'type="hidden"' in tag or 'type="checkbox"' in tag:
            continue  # checkboxes are wrapped in their label
        ident = re.search(r'\bid="([^"]+)"', tag)
        assert ident and f'for="{ident.group(1)}"' in html, f"unlabelled field: {tag}"


PAGES = ["/w/acme/members/", "/w/acme/tokens/", "/w/acme/webhook-secrets/"]


@pytest.mark.parametrize("url", PAGES)
def test_outsiders_get_404_and_the_pages_are_strict(world, url):
    assert _page(world, "oscar").get(url).status_code == 404
    page = _page(world, "ann").get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert not INLINE.search(html)
    _labelled(html)


def test_member_management_is_for_admins(world):
    aud = _page(world, "aud")
    assert aud.get("/w/acme/members/").status_code == 403
    assert aud.post("/w/acme/members/", {"username": "oscar", "roles": ["auditor"]}
                    ).status_code == 403
    assert aud.post("/w/acme/members/alice/remove").status_code == 403
    assert aud.post("/w/acme/members/alice/roles", {"roles": ["auditor"]}).status_code == 403
    assert aud.get("/w/acme/webhook-secrets/").status_code == 403
    assert aud.post("/w/acme/webhook-secrets/", {"name": "agent"}).status_code == 403
    assert not Membership.objects.filter(user=world.oscar, workspace=world.acme).exists()
    assert not WebhookSecret.objects.exists()
    # The navigation offers Members to admins only.
    assert 'href="/w/acme/members/"' not in aud.get("/w/acme/").content.decode()
    assert 'href="/w/acme/members/"' in _page(world, "ann").get("/w/acme/").content.decode()


def test_an_admin_adds_changes_and_removes_a_member_on_the_page(world):
    ann = _page(world, "ann")

    added = ann.post("/w/acme/members/", {"username": "oscar", "roles": ["auditor", "author"]},
                     follow=True)
    assert "oscar added with the roles auditor, author" in added.content.decode()
    changed = ann.post("/w/acme/members/oscar/roles", {"roles": ["reviewer"]}, follow=True)
    assert "oscar now has the roles reviewer" in changed.content.decode()
    assert set(Membership.objects.filter(user=world.oscar, workspace=world.acme)
               .values_list("role", flat=True)) == {"reviewer"}
    removed = ann.post("/w/acme/members/oscar/remove", follow=True)
    assert "oscar was removed" in removed.content.decode()
    assert not Membership.objects.filter(user=world.oscar, workspace=world.acme).exists()
    assert list(AuditLogEntry.objects.filter(actor=world.ann, action__startswith="member.")
                .values_list("action", flat=True)) == [
        "member.added", "member.roles_changed", "member.removed"]


def test_the_page_explains_a_refusal_next_to_the_field(world):
    ann = _page(world, "ann")

    unknown = ann.post("/w/acme/members/", {"username": "nobody", "roles": ["auditor"]})
    assert unknown.status_code == 422
    html = unknown.content.decode()
    assert 'aria-invalid="true" aria-describedby="username-error"' in html
    assert "there is no account named" in html
    last = ann.post("/w/acme/members/ann/roles", {"roles": ["author"]})
    assert last.status_code == 409
    assert "ann is the last admin" in last.content.decode()
    assert ann.post("/w/acme/members/ann/remove").status_code == 409
    assert ann.post("/w/acme/members/nobody/remove").status_code == 404


def test_a_token_secret_is_shown_once_and_never_cached(world):
    aud = _page(world, "aud")

    created = aud.post("/w/acme/tokens/", {"name": "ci job", "roles": ["auditor"]})
    assert created.status_code == 201
    html = created.content.decode()
    secret = re.search(r'id="new-token" class="secret-value" value="(cs_[^"]+)"', html).group(1)
    assert "no-store" in created["Cache-Control"]
    token = ApiToken.objects.get(name="ci job")
    assert secret.startswith(f"cs_{token.prefix}_")
    assert Api(token=secret).get("w/acme/uploads").status_code == 200
    again = aud.get("/w/acme/tokens/").content.decode()
    assert secret not in again and f"cs_{token.prefix}_…" in again
    # Only roles the person holds are offered, and others are refused.
    assert 'value="auditor"' in again and 'value="reviewer"' not in again
    refused = aud.post("/w/acme/tokens/", {"name": "sneaky", "roles": ["reviewer"]})
    assert refused.status_code == 403 and "you do not hold reviewer" in refused.content.decode()
    unnamed = aud.post("/w/acme/tokens/", {"name": " ", "roles": ["auditor"]})
    assert unnamed.status_code == 422 and 'aria-describedby="name-error"' in \
        unnamed.content.decode()


def test_people_revoke_their_own_tokens_and_admins_anyones(world):
    aud, ann = _page(world, "aud"), _page(world, "ann")
    aud.post("/w/acme/tokens/", {"name": "mine", "roles": ["auditor"]})
    ann.post("/w/acme/tokens/", {"name": "ops", "roles": ["admin"]})
    mine, ops = ApiToken.objects.get(name="mine"), ApiToken.objects.get(name="ops")

    listing = aud.get("/w/acme/tokens/").content.decode()
    assert "mine" in listing and "ops" not in listing
    refused = aud.post(f"/w/acme/tokens/{ops.id}/revoke")
    assert refused.status_code == 403
    assert "only an admin" in refused.content.decode()
    assert aud.post(f"/w/acme/tokens/{mine.id}/revoke").status_code == 302
    assert ann.post(f"/w/acme/tokens/{ops.id}/revoke").status_code == 302
    mine.refresh_from_db()
    ops.refresh_from_db()
    assert mine.revoked_at and ops.revoked_at
    assert _page(world, "oscar").post(f"/w/acme/tokens/{mine.id}/revoke").status_code == 404


def test_an_admin_creates_and_revokes_webhook_secrets(world):
    ann = _page(world, "ann")

    unnamed = ann.post("/w/acme/webhook-secrets/", {"name": " "})
    assert unnamed.status_code == 422 and "name the secret" in unnamed.content.decode()
    assert not WebhookSecret.objects.exists()
    created = ann.post("/w/acme/webhook-secrets/", {"name": "payments agent"})
    assert created.status_code == 201 and "no-store" in created["Cache-Control"]
    secret = WebhookSecret.objects.get()
    assert secret.name == "payments agent"
    assert f'value="{secret.secret}"' in created.content.decode()
    listing = ann.get("/w/acme/webhook-secrets/").content.decode()
    assert secret.secret not in listing and f"…{secret.secret[-4:]}" in listing
    assert "payments agent" in listing
    assert ann.post(f"/w/acme/webhook-secrets/{secret.id}/revoke").status_code == 302
    secret.refresh_from_db()
    assert secret.revoked_at is not None


def test_the_live_page_links_to_the_tokens_page(world):
    page = _page(world, "ann").get("/w/acme/live/").content.decode()
    assert 'href="/w/acme/tokens/"' in page and "Tokens page" in page
    assert "POST /api/w/" not in page and "http://testserver/api/w/acme/tokens" not in page


# --- the review queue ------------------------------------------------------------------------

def _submitted(world, name: str, by: str):
    rule = Api(user=world.users[by]).post("w/acme/rules", {"name": name,
                                                            "formula": "G !x"}).json()
    answer = Api(user=world.users[by]).post(
        f"w/acme/rules/{rule['id']}/versions/1/submit", {"acknowledgement": "x is reported"})
    assert answer.status_code == 200, answer.content
    return rule


def test_reviewers_see_what_waits_for_them_and_authors_their_rejections(world):
    alices = _submitted(world, "alices_rule", "alice")
    _submitted(world, "anns_rule", "ann")  # rob may review it; ann never sees her own

    rob = _page(world, "rob").get("/w/acme/").content.decode()
    queue = rob[rob.index('id="review-queue"'):]
    assert "alices_rule, version 1" in queue and "anns_rule, version 1" in queue
    assert re.search(r'To review <span class="count-badge">2</span>', rob)
    # Your own versions wait for someone else.
    ann = _page(world, "ann").get("/w/acme/").content.decode()
    assert "alices_rule, version 1" in ann and "anns_rule, version 1" not in ann
    assert re.search(r'To review <span class="count-badge">1</span>', ann)
    # Auditors review nothing: no queue, no count.
    aud = _page(world, "aud").get("/w/acme/").content.decode()
    assert 'id="review-queue"' not in aud and "count-badge" not in aud

    assert Api(user=world.rob).post(f"w/acme/rules/{alices['id']}/versions/1/reject",
                                    {"comment": "say which x"}).status_code == 200
    alice = _page(world, "alice").get("/w/acme/rules/").content.decode()
    assert re.search(r'Rejected <span class="count-badge">1</span>', alice)
    home = _page(world, "alice").get("/w/acme/").content.decode()
    assert "alices_rule, version 1" in home and "say which x" in home
    assert re.search(r'To review <span class="count-badge">1</span>',
                     _page(world, "rob").get("/w/acme/rules/").content.decode())
    # A new version answers the rejection: it leaves the author's queue.
    assert Api(user=world.alice).post(f"w/acme/rules/{alices['id']}/versions",
                                      {"formula": "G !y"}).status_code == 201
    assert "count-badge" not in _page(world, "alice").get("/w/acme/").content.decode()


# --- sign-in throttling ----------------------------------------------------------------------

@pytest.fixture
def signed_up(db, settings):
    from django.core.cache import cache

    from studio.workspaces.services import create_user

    cache.clear()
    settings.SIGN_IN_MAX_FAILURES = 3
    settings.SIGN_IN_MAX_FAILURES_PER_ADDRESS = 5
    settings.SIGN_IN_LOCKOUT_SECONDS = 60
    create_user("zoe", "the right password 1")
    create_user("yan", "the right password 2")
    yield
    cache.clear()


def _sign_in(username: str, password: str, address: str = "10.0.0.1"):
    return Client(REMOTE_ADDR=address).post("/accounts/login/",
                                            {"username": username, "password": password})


def test_an_account_is_paused_after_failures_even_with_the_right_password(signed_up, settings):
    for _ in range(3):
        assert _sign_in("zoe", "wrong").status_code == 200
    refused = _sign_in("zoe", "the right password 1", address="10.9.9.9")
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert "Too many failed sign-ins" in refused.content.decode()
    assert "_auth_user_id" not in refused.wsgi_request.session
    # Another account from another address is not affected.
    assert _sign_in("yan", "the right password 2", address="10.9.9.9").status_code == 302


def test_an_address_is_paused_after_failures_across_accounts(signed_up):
    for name in ("a", "b", "c", "d", "yan"):
        _sign_in(name, "wrong")
    # The address's lock holds the usernames that failed from it (tests/web/test_signin_proxy.py)
    assert _sign_in("yan", "the right password 2").status_code == 429
    assert _sign_in("yan", "the right password 2", address="10.0.0.2").status_code == 302
    assert _sign_in("zoe", "the right password 1").status_code == 302


def test_the_pause_ends_when_the_window_passes(signed_up, monkeypatch):
    for _ in range(3):
        _sign_in("zoe", "wrong")
    assert _sign_in("zoe", "the right password 1").status_code == 429
    later = time.time() + 61  # the cache and the lock both read time.time()
    monkeypatch.setattr(time, "time", lambda: later)
    assert _sign_in("zoe", "the right password 1").status_code == 302


def test_the_admin_sites_sign_in_is_throttled_too(signed_up):
    for _ in range(3):
        Client().post("/admin/login/", {"username": "zoe", "password": "wrong"})
    refused = Client().post("/admin/login/", {"username": "zoe",
                                              "password": "the right password 1"})
    assert "Too many failed sign-ins" in refused.content.decode()
