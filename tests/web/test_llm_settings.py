"""The LLM endpoint settings page: admins only, the key encrypted at rest and never shown back
(its last four characters only), every change in the audit log, and the environment's key never
sent to another endpoint."""

from __future__ import annotations

import html

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client, override_settings

from studio.labeling.llm import LLMNotConfigured
from studio.workspaces import llm
from studio.workspaces import services as ws
from studio.workspaces.models import AuditLogEntry, LLMEndpoint
from tests.api.world import world  # noqa: F401
from tests.web.test_member_pages import INLINE, _labelled

URL = "/w/acme/settings/llm/"
KEY = "sk-live-very-secret-key-4821"


def _page(world, name: str, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(world.users[name])
    return client


def _save(client: Client, **fields):
    data = {"base_url": "https://llm.example.com/v1", "model": "gpt-4o-mini",
            "key_source": "stored", "api_key": KEY, **fields}
    return client.post(URL, data)


def test_only_admins_see_or_change_the_endpoint(world):
    assert _page(world, "oscar").get(URL).status_code == 404
    assert _save(_page(world, "oscar")).status_code == 404
    for name in ("alice", "rob", "aud"):
        assert _page(world, name).get(URL).status_code == 403
        assert _save(_page(world, name)).status_code == 403
        assert _page(world, name).post(URL + "remove").status_code == 403
    assert not LLMEndpoint.objects.exists()
    page = _page(world, "ann").get(URL)
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    text = page.content.decode()
    assert not INLINE.search(text)
    _labelled(text)
    # the workspace page links to it for admins only
    assert f'href="{URL}"' in _page(world, "ann").get("/w/acme/").content.decode()
    assert f'href="{URL}"' not in _page(world, "alice").get("/w/acme/").content.decode()


def test_the_form_needs_a_csrf_token(world):
    client = _page(world, "ann", enforce_csrf_checks=True)
    assert _save(client).status_code == 403
    assert not LLMEndpoint.objects.exists()


def test_the_key_is_encrypted_at_rest_and_never_shown_back(world):
    ann = _page(world, "ann")
    saved = _save(ann)
    assert saved.status_code == 302
    endpoint = LLMEndpoint.objects.get(workspace=world.acme)
    assert endpoint.key_source == "stored" and endpoint.encrypted_key
    # nothing in the row holds the key: not the model's values, not the raw table
    assert KEY not in repr(LLMEndpoint.objects.filter(pk=endpoint.pk).values().get())
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {LLMEndpoint._meta.db_table}")
        assert all(KEY not in str(value) for row in cursor.fetchall() for value in row)
    assert llm.decrypt_key(endpoint.encrypted_key) == KEY
    text = ann.get(URL).content.decode()
    assert KEY not in text and "…4821" in text
    assert 'name="api_key" type="password" value=""' in text
    # the workspace's engine asks this endpoint with the key
    config = llm.config_of(endpoint)
    assert (config.base_url, config.model, config.api_key) == (
        "https://llm.example.com/v1", "gpt-4o-mini", KEY)


def test_a_blank_key_keeps_the_stored_one_and_changes_are_logged(world):
    ann = _page(world, "ann")
    _save(ann)
    first = LLMEndpoint.objects.get().encrypted_key
    assert _save(ann, model="gpt-4.1", api_key="").status_code == 302
    endpoint = LLMEndpoint.objects.get()
    assert endpoint.model == "gpt-4.1" and endpoint.encrypted_key == first
    assert _save(ann, model="gpt-4.1", api_key="").status_code == 302     # no change: no entry
    assert ann.post(URL + "remove").status_code == 302
    assert not LLMEndpoint.objects.exists()
    log = list(AuditLogEntry.objects.filter(workspace=world.acme,
                                            action__startswith="llm_endpoint."))
    assert [(e.action, e.actor) for e in log] == [("llm_endpoint.set", world.ann),
                                                  ("llm_endpoint.set", world.ann),
                                                  ("llm_endpoint.removed", world.ann)]
    assert log[0].details == {"before": None, "key_changed": True, "after": {
        "base_url": "https://llm.example.com/v1", "model": "gpt-4o-mini",
        "key_source": "stored"}}
    assert log[1].details["key_changed"] is False
    assert log[1].details["before"]["model"] == "gpt-4o-mini"
    assert all(KEY not in repr(e.details) for e in log)


def test_refusals_are_explained_next_to_the_field(world):
    ann = _page(world, "ann")
    bad_url = _save(ann, base_url="ftp://example.com")
    assert bad_url.status_code == 422 and "http:// or https:// URL" in bad_url.content.decode()
    no_key = _save(ann, api_key="")
    assert no_key.status_code == 422 and "enter the API key to store" in no_key.content.decode()
    assert not LLMEndpoint.objects.exists()
    assert not AuditLogEntry.objects.filter(action__startswith="llm_endpoint.").exists()


def test_the_environments_key_goes_to_the_environments_endpoint_only(world, monkeypatch):
    monkeypatch.setenv("LLM_BASE_URL", "https://llm.example.com/v1")
    monkeypatch.setenv("LLM_API_KEY", "sk-operator-key")
    ann = _page(world, "ann")
    elsewhere = _save(ann, base_url="https://attacker.example.net/v1", key_source="environment")
    assert elsewhere.status_code == 422
    assert "only sent to the environment's endpoint" in html.unescape(
        elsewhere.content.decode())
    assert _save(ann, base_url="https://llm.example.com/v1/", key_source="environment",
                 api_key="").status_code == 302
    endpoint = LLMEndpoint.objects.get()
    assert endpoint.encrypted_key == "" and llm.config_of(endpoint).api_key == "sk-operator-key"
    # if the environment moves, the key does not follow the workspace's endpoint
    monkeypatch.setenv("LLM_BASE_URL", "https://other.example.org/v1")
    with pytest.raises(LLMNotConfigured, match="only sent to the environment's endpoint"):
        llm.config_of(endpoint)


def test_a_key_no_secret_decrypts_is_a_clear_message(world):
    endpoint = ws.set_llm_endpoint(world.acme, "https://llm.example.com/v1", "m", "stored", KEY,
                                   by=world.ann)
    with override_settings(SECRET_KEY="another-secret-entirely", SECRET_KEY_FALLBACKS=[]):
        with pytest.raises(LLMNotConfigured, match="an admin enters it again"):
            llm.config_of(endpoint)
        page = _page(world, "ann").get(URL).content.decode()
        assert "cannot be decrypted" in page and "…4821" not in page
    # a rotated secret kept among the fallbacks still decrypts
    with override_settings(SECRET_KEY="the-new-secret",
                           SECRET_KEY_FALLBACKS=[settings.SECRET_KEY]):
        assert llm.config_of(endpoint).api_key == KEY
