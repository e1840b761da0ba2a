"""Hostile input at the boundary: NUL characters and lone surrogates in JSON bodies, form fields
and query parameters, JSON nested beyond any use, over-long file names.

Postgres refuses NUL in text and JSON, and a lone surrogate cannot be encoded as UTF-8 at all, so
either one reaching the database was a 500 (and, in a formula, a rule that broke every audit).
They are refused once, where a request is read (``studio.boundary``), naming the field.
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils.html import escape
from ninja import Schema

from studio.boundary import HostileInput, Text, text_problem
from studio.rules.models import Labeler, Rule
from studio.traces.models import Upload
from studio.workspaces.models import ApiToken

LONE_SURROGATE = '"\\ud800"'  # as JSON text: a string holding one unpaired high surrogate
NUL = '"a\\u0000b"'


def post_json_text(client: Client, path: str, text: str, token: str | None = None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.post(path, data=text.encode(), content_type="application/json",
                       headers=headers)


@pytest.fixture
def acme(world):
    client = Client()
    client.force_login(world.ann)
    return client


# ---------------------------------------------------------------------------------------------
# JSON bodies

@pytest.mark.parametrize("bad", [LONE_SURROGATE, NUL, '"\\udc00x"', '"\\uDBFF"'])
@pytest.mark.parametrize("path, template, field", [
    ("/api/w/acme/tokens", '{"name": %s, "roles": ["auditor"]}', "name"),
    ("/api/w/acme/rules", '{"name": "r", "formula": "G a", "description": %s}', "description"),
    ("/api/w/acme/labelers", '{"atom": "x", "kind": "regex", '
                             '"config": {"path": "output", "pattern": %s}}', "config.pattern"),
])
def test_a_json_body_with_nul_or_a_lone_surrogate_is_refused_naming_the_field(
        world, acme, path, template, field, bad):
    response = post_json_text(acme, path, template % bad)
    assert response.status_code == 422, response.content
    assert response.json()["field"] == field
    assert not ApiToken.objects.filter(name__startswith="a").exists()
    assert not Rule.objects.exists()
    assert not Labeler.objects.exists()


def test_a_surrogate_pair_is_text_like_any_other(world, acme):
    response = post_json_text(acme, "/api/w/acme/rules",
                              '{"name": "r", "formula": "G a", "description": "\\ud83d\\ude00"}')
    assert response.status_code == 201, response.content
    assert Rule.objects.get().description == "\N{GRINNING FACE}"


def test_a_backslash_before_u0000_is_not_a_nul(world, acme):
    response = post_json_text(acme, "/api/w/acme/rules",
                              '{"name": "r", "formula": "G a", "description": "\\\\u0000"}')
    assert response.status_code == 201, response.content
    assert Rule.objects.get().description == "\\u0000"


@pytest.mark.parametrize("formula", [
    'G !"\ud800"',     # the surrogate itself, decoded from the JSON body
    'G !"\\ud800"',    # the formula language's own escape, decoded by the parser
    'G !"a\\u0000"',   # NUL through the formula language's escape
])
def test_a_formula_with_a_lone_surrogate_or_nul_in_a_quoted_atom_is_refused_at_create(
        world, acme, formula):
    body = json.dumps({"name": "r", "formula": formula}, ensure_ascii=True)
    response = post_json_text(acme, "/api/w/acme/rules", body)
    assert response.status_code == 422, response.content
    assert response.json()["field"] == "formula"
    assert not Rule.objects.exists()


@pytest.mark.parametrize("bad", [LONE_SURROGATE, NUL])
def test_a_live_event_with_nul_or_a_lone_surrogate_is_refused_naming_the_field(world, bad):
    token = world.token(world.acme)
    response = post_json_text(Client(), "/api/w/acme/live/sessions/s1/events",
                              '{"events": [{"event_id": "e1", "data": {"note": %s}}]}' % bad,
                              token=token)
    assert response.status_code == 422, response.content
    assert response.json()["field"] == "events[0].data.note"
    from studio.traces.models import Event
    assert not Event.objects.exists()


def test_a_key_with_nul_is_refused_too(world, acme):
    response = post_json_text(acme, "/api/w/acme/labelers",
                              '{"atom": "x", "kind": "regex", '
                              '"config": {"path": "output", "pattern": "a", "k\\u0000": 1}}')
    assert response.status_code == 422, response.content
    assert response.json()["field"].startswith("config")


@pytest.mark.parametrize("depth", [150, 1000, 100_000])
def test_json_nested_too_deep_is_a_400_not_a_server_error(world, acme, depth):
    nested = "[" * depth + "]" * depth
    body = '{"atom": "x", "kind": "field", "config": {"path": "a", "op": "==", "value": %s}}'
    response = post_json_text(acme, "/api/w/acme/labelers", body % nested)
    assert response.status_code == 400, response.content[:300]
    assert "is nested more than 100 levels deep" in response.json()["detail"]
    if depth < 500:  # deeper, Python's own parser gives up first, before any place is known
        assert response.json()["field"] == "config.value"
    token = world.token(world.acme)
    live = post_json_text(Client(), "/api/w/acme/live/sessions/s1/events",
                          '{"events": [{"data": {"x": %s}}]}' % nested, token=token)
    assert live.status_code == 400, live.content[:300]


# ---------------------------------------------------------------------------------------------
# Query parameters and form fields, on the API and the pages

def test_nul_in_a_query_parameter_is_refused_on_the_api_and_the_page(world, acme):
    api = acme.get("/api/w/acme/sessions?q=%00")
    assert api.status_code == 422
    assert api.json()["field"] == "q"
    page = acme.get("/w/acme/sessions/?q=a%00b")
    assert page.status_code == 422
    # The field as the URL spells it: the page's capitalised "Q must ..." used to pass only
    # when the random CSRF token on the page happened to hold a lowercase q.
    assert b"<code>q</code> must not contain NUL characters" in page.content


def test_nul_in_a_page_form_field_is_refused_and_nothing_is_stored(world, acme):
    response = acme.post("/w/acme/rules/", {"name": "r\x00", "formula": "G a",
                                             "description": ""})
    assert response.status_code == 422
    assert b"<code>name</code> must not contain NUL characters" in response.content
    assert not Rule.objects.exists()


def test_options_nested_deep_in_an_upload_are_a_400(world, acme, settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path
    depth = 100_000
    response = acme.post("/api/w/acme/uploads", {
        "file": SimpleUploadedFile("log.jsonl", b'{"session": "s", "output": "x"}\n'),
        "format": "jsonl", "options": '{"a": ' * depth + "1" + "}" * depth})
    assert response.status_code == 400, response.content[:300]
    assert response.json()["field"] == "options"
    assert not Upload.objects.exists()


def multipart(file_name: str, content: bytes, **fields: str) -> tuple[bytes, str]:
    """A multipart body written out by hand: Django's test client (like UploadedFile) cuts a
    file name to 255 characters before sending it, a browser or curl does not."""
    boundary = "hostileboundary"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
             f"{value}\r\n".encode() for name, value in fields.items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                 f'filename="{file_name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
                 .encode() + content + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), \
        f"multipart/form-data; boundary={boundary}"


# Kept in memory, then spooled to disk (where Django's temporary file is named after the
# "extension"); 600 characters reach the upload handlers, 2,000 overflow the part's headers.
@pytest.mark.parametrize("size, length", [(100, 600), (3 * 1024 * 1024, 600), (100, 2000),
                                          (3 * 1024 * 1024, 2000)])
def test_an_upload_file_name_of_2000_characters_is_a_400_on_the_api_and_the_page(
        world, acme, settings, tmp_path, size, length):
    settings.UPLOAD_ROOT = tmp_path
    name = "log." + "a" * (length - 4)
    line = b'{"session": "s", "output": "x"}\n'
    content = line * (size // len(line) + 1)
    body, content_type = multipart(name, content, format="jsonl")
    api = acme.post("/api/w/acme/uploads", body, content_type=content_type)
    assert api.status_code == 400, api.content[:300]
    if length < 1000:
        assert api.json()["field"] == "file"
        assert f"{length} characters" in api.json()["detail"]
    else:
        assert "file name" in api.json()["detail"]
    page = acme.post("/w/acme/uploads/", body, content_type=content_type)
    assert page.status_code == 400
    assert b"file" in page.content and b"Not accepted" in page.content
    assert not Upload.objects.exists()


def test_ordinary_input_still_passes(world, acme):
    assert acme.get("/api/w/acme/sessions?q=caf%C3%A9").status_code == 200
    assert acme.get("/w/acme/sessions/?q=caf%C3%A9").status_code == 200
    response = post_json_text(acme, "/api/w/acme/rules", json.dumps(
        {"name": "r", "formula": "G a", "description": "deep " + "[" * 50 + "]" * 50}))
    assert response.status_code == 201


def test_a_form_posted_to_the_live_route_is_a_415_not_a_server_error(world):
    # The boundary reads a form's fields before any view: the live route's raw body is gone.
    token = world.token(world.acme, by="ann")
    response = Client().post("/api/w/acme/live/sessions/s1/events",
                             {"events": "x", "file": SimpleUploadedFile("a.txt", b"x")},
                             headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 415
    assert "JSON" in response.json()["detail"]


def test_json_a_service_reads_from_form_text_is_checked_there_too(world):
    # A page's labeler form reads its value as JSON: `"\ud800"` typed in it is a surrogate that
    # no request boundary saw.
    from studio.errors import ServiceError
    from studio.rules import services as rules

    with pytest.raises(ServiceError) as refused:
        rules.create_labeler(world.acme, world.ann, "x", "field",
                             {"path": "output", "op": "==", "value": "\ud800"})
    assert refused.value.field == "config.value" and "surrogate" in refused.value.message
    assert not Labeler.objects.exists()


# ---------------------------------------------------------------------------------------------
# One boundary: the same text is refused with the same status and words wherever it arrives

def test_the_same_nul_gets_the_same_answer_on_every_surface(world, acme, settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path
    problem = text_problem("r\x00")
    api = post_json_text(acme, "/api/w/acme/rules", '{"name": "r\\u0000", "formula": "G a"}')
    page = acme.post("/w/acme/rules/", {"name": "r\x00", "formula": "G a", "description": ""})
    # Django drops a file name's NUL without a word; the boundary keeps it to refuse it.
    body, content_type = multipart("log\x00.jsonl", b'{"session": "s", "output": "x"}\n',
                                   format="jsonl")
    upload = acme.post("/api/w/acme/uploads", body, content_type=content_type)
    upload_page = acme.post("/w/acme/uploads/", body, content_type=content_type)
    live = post_json_text(Client(), "/api/w/acme/live/sessions/s1/events",
                          '{"events": [{"event_id": "e1", "data": {"name": "r\\u0000"}}]}',
                          token=world.token(world.acme))

    assert [r.status_code for r in (api, page, upload, upload_page, live)] == [422] * 5
    assert api.json() == {"detail": f"name {problem}", "field": "name"}
    assert upload.json() == {"detail": f"file {problem}", "field": "file"}
    assert live.json() == {"detail": f"events[0].data.name {problem}",
                           "field": "events[0].data.name"}
    assert f"<code>name</code> {escape(problem)}." in page.content.decode()
    assert f"<code>file</code> {escape(problem)}." in upload_page.content.decode()
    assert not Rule.objects.exists() and not Upload.objects.exists()
    from studio.traces.models import Event
    assert not Event.objects.exists()


@pytest.mark.parametrize("bad", ["r\x00", "r\ud800"])
def test_a_schema_field_and_json_a_service_reads_say_it_in_the_same_words(world, bad):
    from studio.rules import services as rules

    class Named(Schema):
        name: Text

    with pytest.raises(HostileInput) as schema:
        Named(name=bad)
    with pytest.raises(HostileInput) as service:
        rules.create_labeler(world.acme, world.ann, "x", "field",
                             {"path": "output", "op": "==", "value": bad})
    problem = text_problem(bad)
    assert (schema.value.status, schema.value.field, schema.value.message) == (
        422, "name", f"name {problem}")
    assert (service.value.status, service.value.field, service.value.message) == (
        422, "config.value", f"config.value {problem}")
