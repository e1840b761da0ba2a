"""Sign-in, the workspace switcher and the security headers every page carries."""

import pytest
from django.test import Client

from studio.workspaces.models import Role
from studio.workspaces.services import add_member, create_user, create_workspace


@pytest.fixture
def people(db):
    alice = create_user("alice", "correct horse battery")
    bob = create_user("bob", "another long secret")
    payments = create_workspace("Payments", owner=alice)
    support = create_workspace("Support", owner=bob)
    add_member(support, alice, Role.REVIEWER)
    return {"alice": alice, "bob": bob, "payments": payments, "support": support}


def test_pages_need_sign_in_and_the_login_page_explains_failures(people):
    client = Client()
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    response = client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert response.status_code == 200
    assert "do not match" in response.content.decode()


def test_switcher_lists_only_my_workspaces_with_my_roles(people):
    client = Client()
    assert client.login(username="alice", password="correct horse battery")
    page = client.get("/w/payments/").content.decode()
    assert "Payments" in page and "Support" in page
    assert "Approve or reject rule versions" in page  # alice owns Payments: every role
    support = client.get("/w/support/").content.decode()
    assert "Write rules" not in support and "Approve or reject" in support  # reviewer only


def test_outsiders_get_404_on_workspace_pages(people):
    client = Client()
    client.login(username="bob", password="another long secret")
    assert client.get("/w/payments/").status_code == 404


def test_every_page_has_a_strict_content_security_policy(people):
    response = Client().get("/accounts/login/")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy
    assert "frame-ancestors 'none'" in policy
    assert b"<script>" not in response.content  # no inline scripts anywhere


def test_htmx_requests_carry_the_csrf_token(people):
    client = Client()
    client.login(username="alice", password="correct horse battery")
    page = client.get("/w/payments/").content.decode()
    assert 'hx-headers=\'{"X-CSRFToken": "' in page


def test_an_htmx_request_whose_session_expired_is_sent_to_sign_in_whole(client):
    polled = client.get("/w/anything/uploads/1/progress", HTTP_HX_REQUEST="true")
    assert polled.status_code == 204
    assert polled["HX-Redirect"].startswith("/accounts/login/?next=")
    plain = client.get("/w/anything/uploads/1/progress")
    assert plain.status_code == 302 and not plain.has_header("HX-Redirect")


def test_refusals_are_pages_that_say_why(people):
    client = Client()
    assert client.login(username="alice", password="correct horse battery")
    missing = client.get("/w/support/rules/999999/")
    assert missing.status_code == 404
    assert "Not found" in missing.content.decode() and "Your workspaces" in missing.content.decode()
    # alice only reviews in Support: writing a rule there is refused with the role it needs.
    refused = client.post("/w/support/rules/", {"name": "r", "formula": "G p"})
    assert refused.status_code == 403
    page = refused.content.decode()
    assert "Not allowed" in page and "author role" in page
