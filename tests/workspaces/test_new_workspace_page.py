"""Staff open workspaces on a page and become their first admin; nobody else may."""

from __future__ import annotations

from django.test import Client

from studio.workspaces.models import AuditLogEntry, Membership, Workspace


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_staff_create_a_workspace_and_administer_it(world):
    world.ann.is_staff = True
    world.ann.save()
    ann = _signed_in(world.ann)
    # Home redirects a member of one workspace there: both pages offer the link to staff.
    assert 'href="/workspaces/new/"' in ann.get("/", follow=True).content.decode()
    assert ann.get("/workspaces/new/").status_code == 200
    answer = ann.post("/workspaces/new/", {"name": "Claims Team", "slug": ""})
    assert answer.status_code == 302 and answer["Location"] == "/w/claims-team/"
    workspace = Workspace.objects.get(slug="claims-team")
    assert set(Membership.objects.filter(workspace=workspace, user=world.ann)
               .values_list("role", flat=True)) == {"admin", "author", "reviewer", "auditor"}
    entry = AuditLogEntry.objects.get(workspace=workspace, action="workspace.created")
    assert entry.actor == world.ann and entry.details == {"name": "Claims Team"}
    assert ann.get("/w/claims-team/members/").status_code == 200


def test_bad_or_taken_addresses_are_refused_keeping_what_was_typed(world):
    world.ann.is_staff = True
    world.ann.save()
    ann = _signed_in(world.ann)
    taken = ann.post("/workspaces/new/", {"name": "Acme two", "slug": "acme"})
    assert taken.status_code == 409 and "taken" in taken.content.decode()
    assert 'value="Acme two"' in taken.content.decode()
    bad = ann.post("/workspaces/new/", {"name": "X", "slug": "Not OK!"})
    assert bad.status_code == 422 and 'value="Not OK!"' in bad.content.decode()
    empty = ann.post("/workspaces/new/", {"name": " ", "slug": ""})
    assert empty.status_code == 422
    assert Workspace.objects.count() == 2


def test_non_staff_get_403_and_strangers_the_sign_in_page(world):
    aud = _signed_in(world.aud)
    assert aud.get("/workspaces/new/").status_code == 403
    assert aud.post("/workspaces/new/", {"name": "Mine", "slug": "mine"}).status_code == 403
    assert 'href="/workspaces/new/"' not in aud.get("/", follow=True).content.decode()
    assert Client().get("/workspaces/new/").status_code == 302
    assert not Workspace.objects.filter(slug="mine").exists()
