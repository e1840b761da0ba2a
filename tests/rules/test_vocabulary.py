"""Rules grounded in the workspace's vocabulary, over HTTP: formulas/check answers warnings
with suggestions, what an upload or a live event shows stops being unknown, and submitting a
version with warnings needs an acknowledgement the reviewer then reads."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from studio.rules.models import RuleVersion
from studio.traces import vocabulary
from studio.traces.models import VocabularyEntry

pytestmark = pytest.mark.django_db

EVENTS = [
    {"session": "s1", "step": 0, "input": "pay the rent",
     "output": {"tool": "send_money", "args": {"amount": 12000, "recipient": "IBAN1"}},
     "data": {"status": "passed", "stop_reason": "end_turn"}, "labels": ["approved"]},
    {"session": "s1", "step": 1, "input": "check", "output": {"tool": "get_balance", "args": {}},
     "data": {"status": "failed"}},
]


@pytest.fixture(autouse=True)
def _uploads_in_tmp(tmp_path, settings):
    settings.UPLOAD_ROOT = tmp_path / "uploads"


@pytest.fixture(autouse=True)
def _fresh_memory():
    vocabulary.forget_stored()
    yield
    vocabulary.forget_stored()


def upload(world, events, django_capture_on_commit_callbacks, name="log.jsonl"):
    body = "".join(json.dumps(e) + "\n" for e in events).encode()
    client = world.as_("aud").client
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/w/acme/uploads", data={
            "file": SimpleUploadedFile(name, body), "format": "jsonl"})
    assert response.status_code == 201, response.content
    return response.json()


def check(world, text):
    response = world.as_("alice").post("w/acme/formulas/check", {"text": text})
    assert response.status_code == 200
    return response.json()


def codes(body):
    return {(w["code"], w["subject"]): w for w in body["warnings"]}


def test_each_warning_names_its_subject_and_the_nearest_vocabulary_entry(
        world, django_capture_on_commit_callbacks):
    upload(world, EVENTS, django_capture_on_commit_callbacks)

    body = check(world, 'G(tool_call:send_mony -> output.tol == "x" & '
                        'output.args.amount > "10000")')

    found = codes(body)
    atom = found[("unknown_atom", "tool_call:send_mony")]
    assert atom["suggestion"] == "tool_call:send_money"
    assert "no labeler" in atom["message"] and "`send_mony`" in atom["message"]
    assert "Did you mean `tool_call:send_money`?" in atom["message"]
    path = found[("unknown_path", "output.tol")]
    assert path["suggestion"] == "output.tool"
    mismatch = found[("type_mismatch", 'output.args.amount > "10000"')]
    assert mismatch["suggestion"] == "output.args.amount > 10000"
    assert "numbers" in mismatch["message"] and "always false" in mismatch["message"]
    # The paths the rule reads, with what they held and what they are compared with.
    amount = next(p for p in body["paths"] if p["path"] == "output.args.amount")
    assert amount == {"path": "output.args.amount", "seen_types": ["number"],
                      "compared_with": ["string"]}


def test_known_names_and_matching_kinds_have_no_vocabulary_warning(
        world, django_capture_on_commit_callbacks):
    upload(world, EVENTS, django_capture_on_commit_callbacks)

    body = check(world, 'G(tool_call:send_money & output.args.amount > 10000 & '
                        'data.status == "passed" -> O approved) & F "stop_reason:end_turn"')

    assert [w for w in body["warnings"]
            if w["code"] in ("unknown_atom", "unknown_path", "type_mismatch")] == []
    assert {a["atom"]: a["source"] for a in body["atoms"]} == {
        "approved": "events", "stop_reason:end_turn": "builtin",
        "tool_call:send_money": "builtin"}


def test_a_text_path_compared_with_a_number_is_a_mismatch_too(
        world, django_capture_on_commit_callbacks):
    upload(world, EVENTS, django_capture_on_commit_callbacks)

    found = codes(check(world, "G(data.status != 3)"))

    warning = found[("type_mismatch", "data.status != 3")]
    assert "always true" in warning["message"]
    assert warning["suggestion"] == 'data.status != "3"'


def test_atoms_inside_past_operators_are_read_and_checked(world):
    body = check(world, "G(tool_call:send_money -> O approved)")

    assert [a["atom"] for a in body["atoms"]] == ["approved", "tool_call:send_money"]
    assert ("unknown_atom", "approved") in codes(body)


def test_the_review_aids_warnings_come_in_the_same_list(world):
    body = check(world, "G(p -> q) & G !q")

    vacuous = [w for w in body["warnings"] if w["code"] == "vacuous"]
    assert vacuous and vacuous[0]["subject"] == "p" and vacuous[0]["suggestion"] is None


def test_a_labeler_makes_its_atom_known(world):
    assert ("unknown_atom", "approved") in codes(check(world, "F approved"))
    created = world.as_("alice").post("w/acme/labelers", {
        "atom": "approved", "kind": "regex", "config": {"path": "output", "pattern": "ok"}})
    assert created.status_code == 201

    body = check(world, "F approved")

    assert ("unknown_atom", "approved") not in codes(body)
    assert body["atoms"] == [{"atom": "approved", "produced": True, "source": "labeler"}]


def test_a_tool_seen_in_an_upload_stops_being_unknown(world, django_capture_on_commit_callbacks):
    assert ("unknown_atom", "tool_call:refund") in codes(check(world, "F tool_call:refund"))
    assert ("unknown_path", "data.reason") in codes(check(world, 'F data.reason == "late"'))

    upload(world, [{"session": "r", "step": 0, "input": "x",
                    "output": {"tool": "refund", "args": {}}, "data": {"reason": "late"}}],
           django_capture_on_commit_callbacks)

    assert ("unknown_atom", "tool_call:refund") not in codes(check(world, "F tool_call:refund"))
    assert ("unknown_path", "data.reason") not in codes(check(world, 'F data.reason == "late"'))


def test_a_live_events_tool_stops_being_unknown(world):
    token = world.token(world.acme)
    assert ("unknown_atom", "tool_call:freeze") in codes(check(world, "F tool_call:freeze"))

    posted = world.as_("alice").call(
        "POST", "w/acme/live/sessions/agent-1/events",
        {"events": [{"event_id": "e1", "input": "hi",
                     "output": {"tool": "freeze", "args": {"card": "1234"}}}]},
        Authorization=f"Bearer {token}")
    assert posted.status_code == 200, posted.content

    body = check(world, 'F tool_call:freeze & F output.args.card == "1234"')
    assert ("unknown_atom", "tool_call:freeze") not in codes(body)
    assert ("unknown_path", "output.args.card") not in codes(body)


def test_data_fields_are_also_read_at_the_top_of_the_event(
        world, django_capture_on_commit_callbacks):
    upload(world, [{"session": "t", "step": 0, "input": "go west",
                    "output": "ok", "env": {"location": "kitchen"}}],
           django_capture_on_commit_callbacks)

    body = check(world, 'G(env.location == "kitchen" & data.env.location == "kitchen")')

    assert not [w for w in body["warnings"] if w["code"] == "unknown_path"]


def test_submitting_with_warnings_needs_an_acknowledgement_recorded_for_the_reviewer(world):
    alice, rob = world.as_("alice"), world.as_("rob")
    rule = alice.post("w/acme/rules", {"name": "approvals",
                                       "formula": "G(tool_call:send_money -> O approved)"})
    assert rule.status_code == 201
    base = f"w/acme/rules/{rule.json()['id']}/versions/1"

    refused = alice.post(f"{base}/submit")
    assert refused.status_code == 400
    assert refused.json()["field"] == "acknowledgement"
    assert "unknown_atom `approved`" in refused.json()["detail"]
    assert {w["subject"] for w in refused.json()["details"]["warnings"]} >= {
        "approved", "tool_call:send_money"}
    assert RuleVersion.objects.get(rule_id=rule.json()["id"]).status == "draft"

    blank = alice.post(f"{base}/submit", {"acknowledgement": "   "})
    assert blank.status_code == 400

    submitted = alice.post(f"{base}/submit",
                           {"acknowledgement": "a labeler for `approved` will be added"})
    assert submitted.status_code == 200, submitted.json()
    body = submitted.json()
    assert body["status"] == "in_review"
    assert body["acknowledgement"] == "a labeler for `approved` will be added"
    assert {w["code"] for w in body["submitted_warnings"]} == {"unknown_atom"}
    # The reviewer reads them on the version, through the API and on the page, first.
    assert rob.get(base).json()["acknowledgement"].startswith("a labeler")
    page = rob.client.get(f"/w/acme/rules/{rule.json()['id']}/?v=1").content.decode()
    assert page.index("a labeler for") < page.index("Review aids")
    assert "Nothing in this workspace produces" in page


def test_a_version_without_warnings_needs_no_acknowledgement(world):
    alice = world.as_("alice")
    world.as_("alice").post("w/acme/labelers", {
        "atom": "p", "kind": "regex", "config": {"path": "output", "pattern": "p"}})
    world.as_("alice").post("w/acme/labelers", {
        "atom": "q", "kind": "regex", "config": {"path": "output", "pattern": "q"}})
    rule = alice.post("w/acme/rules", {"name": "pq", "formula": "G(p -> F q)"}).json()

    submitted = alice.post(f"w/acme/rules/{rule['id']}/versions/1/submit")

    assert submitted.status_code == 200, submitted.json()
    assert submitted.json()["submitted_warnings"] == []
    assert submitted.json()["acknowledgement"] == ""


def test_the_page_refuses_a_submission_with_warnings_without_an_acknowledgement(world):
    alice = world.as_("alice")
    rule = alice.post("w/acme/rules", {"name": "typo", "formula": "F tool_call:send_mony"}).json()
    url = f"/w/acme/rules/{rule['id']}/"

    refused = alice.client.post(url, {"action": "submit", "formula": "F tool_call:send_mony"})
    assert refused.status_code == 400
    assert "acknowledgement" in refused.content.decode()
    assert RuleVersion.objects.get(rule_id=rule["id"]).status == "draft"

    accepted = alice.client.post(url, {"action": "submit", "formula": "F tool_call:send_mony",
                                       "acknowledgement": "the tool is named so in staging"})
    assert accepted.status_code == 302
    version = RuleVersion.objects.get(rule_id=rule["id"])
    assert (version.status, version.acknowledgement) == ("in_review",
                                                         "the tool is named so in staging")


def test_rebuild_collects_the_vocabulary_from_stored_events(
        world, django_capture_on_commit_callbacks):
    upload(world, EVENTS, django_capture_on_commit_callbacks)
    before = set(VocabularyEntry.objects.filter(workspace=world.acme)
                 .values_list("kind", "name", "json_type"))
    VocabularyEntry.objects.filter(workspace=world.acme).delete()

    call_command("rebuild_vocabulary", "acme")

    after = set(VocabularyEntry.objects.filter(workspace=world.acme)
                .values_list("kind", "name", "json_type"))
    assert after == before
    assert ("builtin", "tool_call:get_balance", "") in after
    assert ("path", "output.args.amount", "number") in after
    assert ("label", "approved", "") in after
