"""The workspace's causal guards: validation through the CPL parser (with positions), the author
role, the audit log, and the API over HTTP with isolation between workspaces."""

import pytest

from studio.causal.examples import MERGE_GUARD
from studio.errors import Conflict, PermissionDenied, ServiceError
from studio.rules import guards
from studio.rules.models import CausalGuard
from studio.workspaces.models import AuditLogEntry, Role
from tests.api.world import Api

pytestmark = pytest.mark.django_db

BROKEN = "cand ==\n  & x"  # line 2, column 3: '&' where a value was expected


def log_of(workspace) -> list[tuple[str, dict]]:
    return list(AuditLogEntry.objects.filter(workspace=workspace, action__startswith="causal_")
                .order_by("id").values_list("action", "details"))


# ---------------------------------------------------------------------------------------------
# Services

def test_a_guard_is_declared_changed_and_deleted_with_each_step_in_the_audit_log(world):
    guard = guards.create_guard(world.acme, world.alice, " merge_ok ", MERGE_GUARD, "Committer",
                                "paper 001")
    assert (guard.name, guard.cpl, guard.owner, guard.created_by) == (
        "merge_ok", MERGE_GUARD, "Committer", world.alice)

    guards.update_guard(guard, world.alice, owner="")
    guards.update_guard(guard, world.alice, owner="")  # no change, no entry
    guards.delete_guard(guard, world.alice)

    assert not CausalGuard.objects.exists()
    assert log_of(world.acme) == [
        ("causal_guard.created", {"name": "merge_ok", "cpl": MERGE_GUARD, "owner": "Committer"}),
        ("causal_guard.updated", {"name": "merge_ok", "changes": {"owner": ["Committer", ""]}}),
        ("causal_guard.deleted", {"name": "merge_ok", "cpl": MERGE_GUARD, "owner": ""}),
    ]
    assert AuditLogEntry.objects.filter(action="causal_guard.created").get().actor == world.alice


def test_a_guard_that_does_not_parse_is_refused_with_its_line_and_column(world):
    with pytest.raises(ServiceError) as refused:
        guards.create_guard(world.acme, world.alice, "g", BROKEN)
    error = refused.value
    assert (error.status, error.field) == (422, "cpl")
    assert error.message.startswith("the CPL formula is not valid: line 2, column 3: ")
    assert (error.details["line"], error.details["column"]) == (2, 3)
    assert "a name" in error.details["expected"]

    guard = guards.create_guard(world.acme, world.alice, "g", "x == 1")
    with pytest.raises(ServiceError) as refused:
        guards.update_guard(guard, world.alice, cpl="x == 1 &")
    assert "line 1, column 9" in refused.value.message
    guard.refresh_from_db()
    assert guard.cpl == "x == 1"


@pytest.mark.parametrize("name", ["", "merge ok", "1st", "a" * 101, "merge-ok"])
def test_a_guard_name_is_an_identifier(world, name):
    with pytest.raises(ServiceError) as refused:
        guards.create_guard(world.acme, world.alice, name, "x == 1")
    assert refused.value.field == "name"


def test_names_are_unique_per_workspace_only(world):
    guards.create_guard(world.acme, world.alice, "merge_ok", "x == 1")
    with pytest.raises(Conflict):
        guards.create_guard(world.acme, world.ann, "merge_ok", "x == 2")
    other = guards.create_guard(world.acme, world.alice, "other", "x == 2")
    with pytest.raises(Conflict):
        guards.update_guard(other, world.alice, name="merge_ok")
    guards.create_guard(world.beta, world.oscar, "merge_ok", "x == 3")  # beta's own
    assert CausalGuard.objects.filter(name="merge_ok").count() == 2


def test_only_authors_declare_change_or_delete_guards(world):
    for name in ("rob", "aud", "oscar"):
        with pytest.raises(PermissionDenied):
            guards.create_guard(world.acme, world.users[name], "g", "x == 1")
    guard = guards.create_guard(world.acme, world.alice, "g", "x == 1")
    with pytest.raises(PermissionDenied):
        guards.update_guard(guard, world.rob, cpl="x == 2")
    with pytest.raises(PermissionDenied):
        guards.delete_guard(guard, world.aud)
    assert CausalGuard.objects.get().cpl == "x == 1"
    assert [action for action, _ in log_of(world.acme)] == ["causal_guard.created"]


# ---------------------------------------------------------------------------------------------
# API over HTTP

def test_the_guards_api_lists_declares_changes_and_deletes(world):
    alice = world.as_("alice")
    created = alice.post("w/acme/guards", {"name": "merge_ok", "cpl": MERGE_GUARD,
                                           "owner": "Committer"})
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["name"], body["owner"], body["created_by"]) == ("merge_ok", "Committer", "alice")

    listing = world.as_("aud").get("w/acme/guards")  # any member reads
    assert [g["name"] for g in listing.json()] == ["merge_ok"]

    changed = alice.patch(f"w/acme/guards/{body['id']}", {"cpl": "x == 1", "owner": ""})
    assert changed.status_code == 200 and (changed.json()["cpl"], changed.json()["owner"]) == (
        "x == 1", "")
    assert alice.delete(f"w/acme/guards/{body['id']}").status_code == 204
    assert alice.get("w/acme/guards").json() == []


def test_a_bad_guard_answers_422_with_the_position(world):
    response = world.as_("alice").post("w/acme/guards", {"name": "g", "cpl": BROKEN})
    assert response.status_code == 422
    body = response.json()
    assert body["field"] == "cpl"
    assert (body["details"]["line"], body["details"]["column"]) == (2, 3)
    assert body["detail"].startswith("the CPL formula is not valid: line 2, column 3")
    named = world.as_("alice").post("w/acme/guards", {"name": "no good", "cpl": "x == 1"})
    assert (named.status_code, named.json()["field"]) == (422, "name")


def test_the_guards_api_keeps_workspaces_apart_with_tokens_and_sessions(world):
    beta_guard = guards.create_guard(world.beta, world.oscar, "beta_only", "x == 1")
    acme_guard = guards.create_guard(world.acme, world.alice, "acme_only", "x == 2")
    reader = world.token(world.acme, roles=[Role.AUDITOR])
    author = world.token(world.acme, roles=[Role.AUTHOR], by="alice")
    beta_token = world.token(world.beta)

    # Outsiders: 404 for reads and writes, as a person and as another workspace's token.
    outsider = world.as_("oscar")
    assert outsider.get("w/acme/guards").status_code == 404
    assert outsider.post("w/acme/guards", {"name": "x", "cpl": "x == 1"}).status_code == 404
    assert outsider.delete(f"w/acme/guards/{acme_guard.id}").status_code == 404
    assert Api(beta_token).get("w/acme/guards").status_code == 404
    assert Api(beta_token).patch(f"w/acme/guards/{acme_guard.id}",
                                 {"cpl": "true"}).status_code == 404
    # Another workspace's guard through our slug: 404, untouched.
    alice = world.as_("alice")
    assert alice.get(f"w/acme/guards/{beta_guard.id}").status_code == 404
    assert alice.patch(f"w/acme/guards/{beta_guard.id}", {"cpl": "true"}).status_code == 404
    assert alice.delete(f"w/acme/guards/{beta_guard.id}").status_code == 404
    # Members without the author role: 403 on writes, reads allowed.
    assert Api(reader).get("w/acme/guards").status_code == 200
    assert Api(reader).post("w/acme/guards", {"name": "x", "cpl": "x == 1"}).status_code == 403
    assert world.as_("rob").delete(f"w/acme/guards/{acme_guard.id}").status_code == 403
    # Nobody: 401.
    assert Api().get("w/acme/guards").status_code == 401
    # An author token writes, and the log names the token.
    made = Api(author).post("w/acme/guards", {"name": "by_token", "cpl": "x == 3"})
    assert made.status_code == 201, made.json()
    entry = AuditLogEntry.objects.get(action="causal_guard.created", details__name="by_token")
    assert entry.actor_token is not None

    beta_guard.refresh_from_db()
    assert (beta_guard.name, beta_guard.cpl) == ("beta_only", "x == 1")
    assert set(CausalGuard.objects.filter(workspace=world.acme).values_list("name", flat=True)) \
        == {"acme_only", "by_token"}
