"""Machine tokens (RELIABILITY 2), sessions with CSRF (13), and the append-only log (16)."""

import pytest
from django.core import serializers
from django.db import connection, transaction
from django.test import Client

from studio.rules import services as rules
from studio.workspaces.models import ApiToken, AuditLogEntry, hash_token
from studio.workspaces.tokens import find_token
from tests.api.world import Api

pytestmark = pytest.mark.django_db


def everything_in_the_database() -> str:
    from django.apps import apps

    return "\n".join(serializers.serialize("json", model.objects.all())
                     for model in apps.get_models())


# --- tokens -----------------------------------------------------------------------------------

def test_a_token_is_shown_once_and_stored_only_as_a_hash(world):
    ann = world.as_("ann")

    created = ann.post("w/acme/tokens", {"name": "ci", "roles": ["author"]})

    assert created.status_code == 201
    secret = created.json()["token"]
    prefix = created.json()["prefix"]
    assert secret.startswith(f"cs_{prefix}_") and len(secret) > 40
    stored = ApiToken.objects.get()
    assert stored.digest == hash_token(secret)
    dump = everything_in_the_database()
    assert secret not in dump
    assert secret.split("_", 2)[2] not in dump  # nor its secret part alone
    listed = ann.get("w/acme/tokens").json()
    assert listed[0]["prefix"] == prefix and "token" not in listed[0]
    assert secret not in ann.get("w/acme/log").content.decode()


def test_a_token_authenticates_for_its_workspace_and_is_found_by_its_prefix(world):
    secret = world.token(world.acme, ["auditor"])

    assert find_token(secret).prefix == secret.split("_")[1]
    assert Api(token=secret).get("w/acme/rules").status_code == 200
    assert Api(token=secret).get("w/beta/rules").status_code == 404
    assert [w["slug"] for w in Api(token=secret).get("w/").json()] == ["acme"]


@pytest.mark.parametrize("mangle", [
    lambda s: s[:-1] + ("A" if s[-1] != "A" else "B"),   # wrong secret, right prefix
    lambda s: "cs_00000000_" + s.split("_", 2)[2],      # right secret, wrong prefix
    lambda s: s.split("_", 2)[2],                       # no prefix at all
    lambda s: "cs_zz\x00zzzzz_x",                       # garbage
    lambda s: "",
])
def test_a_wrong_token_is_401(world, mangle):
    secret = world.token(world.acme)

    response = Api(token=mangle(secret)).get("w/acme/rules")

    assert response.status_code == 401


def test_a_revoked_token_is_401(world):
    ann = world.as_("ann")
    created = ann.post("w/acme/tokens", {"name": "ci", "roles": ["author"]}).json()
    api = Api(token=created["token"])
    assert api.get("w/acme/rules").status_code == 200

    assert ann.delete(f"w/acme/tokens/{created['id']}").status_code == 204

    assert api.get("w/acme/rules").status_code == 401
    assert api.post("w/acme/rules", {"name": "r", "formula": "G p"}).status_code == 401
    assert list(AuditLogEntry.objects.filter(action__startswith="token.")
                .values_list("action", flat=True)) == ["token.created", "token.revoked"]


def test_tokens_do_not_manage_tokens(world):
    api = Api(token=world.token(world.acme))

    assert api.post("w/acme/tokens", {"name": "x", "roles": []}).status_code == 403


def test_a_token_acts_with_its_roles_only(world):
    auditor = Api(token=world.token(world.acme, ["auditor"]))

    response = auditor.post("w/acme/rules", {"name": "r", "formula": "G p"})

    assert response.status_code == 403
    assert response.json()["detail"] == "this needs the author role in workspace 'acme'"


# --- sessions and CSRF ------------------------------------------------------------------------

def test_without_credentials_every_method_is_401_not_a_csrf_error():
    client = Client(enforce_csrf_checks=True)

    for method, path in (("get", "rules"), ("post", "rules"), ("patch", "rule-sets/1"),
                         ("put", "rule-sets/1/rules"), ("delete", "rule-sets/1")):
        response = getattr(client, method)(f"/api/w/acme/{path}", content_type="application/json")
        assert response.status_code == 401, method


def test_a_session_needs_the_csrf_token_on_unsafe_methods(world):
    api = world.as_("alice", enforce_csrf=True)
    body = {"name": "r", "formula": "G p"}

    assert api.get("w/acme/rules").status_code == 200  # safe methods need none
    refused = api.post("w/acme/rules", body)
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    assert not world.acme.rules.exists()

    api.get("/admin/login/")  # any page that sets the csrftoken cookie
    token = api.client.cookies["csrftoken"].value
    assert api.post("w/acme/rules", body, **{"X-CSRFToken": token}).status_code == 201


def test_a_bearer_token_needs_no_csrf_token(world):
    api = Api(token=world.token(world.acme), enforce_csrf=True)

    assert api.post("w/acme/rules", {"name": "r", "formula": "G p"}).status_code == 201


# --- the audit log ----------------------------------------------------------------------------

def approved_version(world):
    rule = rules.create_rule(world.acme, world.alice, "r", "G p")
    version = rules.submit_for_review(rule.versions.get(), world.alice, "warnings known")
    return rules.approve(version, world.rob, "fine")


def test_the_log_is_append_only(world):
    approved_version(world)
    entry = AuditLogEntry.objects.get(action="rule_version.approved")

    entry.details = {"number": 99}
    with pytest.raises(ValueError, match="append-only"):
        entry.save()
    with pytest.raises(ValueError, match="append-only"):
        entry.delete()
    with pytest.raises(ValueError, match="append-only"):
        AuditLogEntry.objects.filter(pk=entry.pk).update(actor=world.alice)
    with pytest.raises(ValueError, match="append-only"):
        AuditLogEntry.objects.filter(pk=entry.pk).delete()
    entry.refresh_from_db()
    assert entry.actor == world.rob and entry.details["number"] == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the trigger is Postgres's")
def test_on_postgres_not_even_sql_rewrites_the_log(world):
    approved_version(world)
    entry = AuditLogEntry.objects.get(action="rule_version.approved")

    for sql in ("UPDATE workspaces_auditlogentry SET actor_id = NULL WHERE id = %s",
                "DELETE FROM workspaces_auditlogentry WHERE id = %s"):
        with (pytest.raises(Exception, match="append-only"), transaction.atomic(),
              connection.cursor() as cursor):
            cursor.execute(sql, [entry.pk])
    assert AuditLogEntry.objects.filter(pk=entry.pk, actor=world.rob).exists()


def test_the_log_says_who_approved_which_version_and_when_in_utc(world):
    version = approved_version(world)

    entries = Api(user=world.aud).get("w/acme/log").json()

    approval = next(e for e in entries if e["action"] == "rule_version.approved")
    assert approval["actor"] == "rob"
    assert (approval["target_type"], approval["target_id"]) == ("ruleversion", version.id)
    assert approval["details"]["rule"] == "r" and approval["details"]["number"] == 1
    assert approval["at"].endswith("Z") or approval["at"].endswith("+00:00")
    assert Api(user=world.oscar).get("w/acme/log").status_code == 404


def test_a_verified_token_is_trusted_for_a_few_seconds_then_looked_up_again(
        world, settings, django_assert_num_queries, monkeypatch):
    import studio.workspaces.tokens as tokens

    settings.TOKEN_CACHE_SECONDS = 5
    secret = world.token(world.acme)
    assert find_token(secret) is not None
    with django_assert_num_queries(0):
        assert find_token(secret) is not None  # no query: verified a moment ago
    # Revoked by another server process (behind this one's back): honoured once the entry expires.
    ApiToken.objects.filter(digest=hash_token(secret)).update(revoked_at="2026-01-01T00:00Z")
    assert find_token(secret) is not None
    clock = tokens.time.monotonic()
    monkeypatch.setattr(tokens.time, "monotonic", lambda: clock + 6)
    assert find_token(secret) is None


def test_a_person_gives_a_token_only_roles_they_hold(world):
    """Separation of duties: an author cannot mint a reviewer's token and approve with it."""
    alice = world.as_("alice")  # an author, nothing else

    refused = alice.post("w/acme/tokens", {"name": "ci", "roles": ["author", "reviewer"]})

    assert refused.status_code == 403
    assert refused.json()["detail"] == ("a token can only have roles you hold in workspace "
                                        "'acme'; you do not hold reviewer")
    assert not ApiToken.objects.exists()
    assert alice.post("w/acme/tokens", {"name": "ci", "roles": ["author"]}).status_code == 201
    assert world.as_("ann").post("w/acme/tokens",  # the owner holds every role
                                 {"name": "all", "roles": ["author", "reviewer",
                                                           "auditor"]}).status_code == 201


# --- webhook secrets --------------------------------------------------------------------------

def test_a_webhook_secret_asked_for_without_a_name_is_numbered_and_a_blank_name_is_refused(world):
    # Callers of the release before names post no body; their secrets are numbered.
    ann = world.as_("ann")
    assert ann.post("w/acme/webhook-secrets", {"name": "payments agent"}).status_code == 201
    unnamed = ann.post("w/acme/webhook-secrets")
    assert unnamed.status_code == 201 and unnamed.json()["name"] == "secret 2"
    blank = ann.post("w/acme/webhook-secrets", {"name": "  "})
    assert blank.status_code == 422 and blank.json()["field"] == "name"


def test_a_webhook_secret_rotation_ends_with_the_old_secret_revoked(world):
    from tests.live.conftest import Agent

    ann = world.as_("ann")
    old = ann.post("w/acme/webhook-secrets", {"name": "agent v1"}).json()
    new = ann.post("w/acme/webhook-secrets", {"name": "agent v2"}).json()
    listed = ann.get("w/acme/webhook-secrets").json()
    assert [(s["id"], s["name"], s["ending"], s["revoked_at"]) for s in listed] == [
        (new["id"], "agent v2", new["secret"][-4:], None),
        (old["id"], "agent v1", old["secret"][-4:], None)]
    assert old["secret"] not in ann.get("w/acme/webhook-secrets").content.decode()
    assert Agent("acme", secret=old["secret"]).post("s1", [{"event_id": "1"}]).status_code == 200

    tokens_cannot = Api(token=world.token(world.acme))
    assert tokens_cannot.delete(f"w/acme/webhook-secrets/{old['id']}").status_code == 403
    assert ann.delete(f"w/acme/webhook-secrets/{old['id']}").status_code == 204

    assert Agent("acme", secret=old["secret"]).post("s1", [{"event_id": "2"}]).status_code == 401
    assert Agent("acme", secret=new["secret"]).post("s1", [{"event_id": "3"}]).status_code == 200
    assert ann.get("w/acme/webhook-secrets").json()[1]["revoked_at"] is not None
    assert ann.delete(f"w/acme/webhook-secrets/{old['id']}").status_code == 204  # idempotent
    assert list(AuditLogEntry.objects.filter(action__startswith="webhook_secret.")
                .order_by("id").values_list("action", "target_id")) == [
        ("webhook_secret.created", old["id"]), ("webhook_secret.created", new["id"]),
        ("webhook_secret.revoked", old["id"])]
