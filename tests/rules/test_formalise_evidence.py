"""Issue 23 over real HTTP: on a workspace holding its own support log (and another log with an
`amount` of its own), the refund sentence reads the refund's own amount, shows the other field
as a warned candidate with where it was seen, says what each reading would flag, and the
author's pick rewrites every reading."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from studio.traces import vocabulary

pytestmark = pytest.mark.django_db

REFUND = "Never promise a refund over 500 dollars without a manager's approval"


def refund(session, step, amount):
    return {"session": session, "step": step, "role": "assistant",
            "output": {"tool": "issue_refund", "args": {"order_id": f"A-{step}",
                                                        "amount": amount}}}


def said(session, step, role, text):
    key = "input" if role == "user" else "output"
    return {"session": session, "step": step, "role": role, key: text}


SUPPORT = [
    said("t-1", 0, "user", "my parcel never came"), refund("t-1", 1, 800),
    said("t-2", 0, "user", "wrong size"), refund("t-2", 1, 120),
    said("t-3", 0, "user", "refund please"), refund("t-3", 1, 45),
    said("t-4", 0, "user", "where is my order?"), said("t-4", 1, "assistant", "on its way"),
]
# Another deployment's log in the same workspace: its own `amount`, never on a refund.
OTHER = [{"session": f"web-{k}", "step": 0,
          "output": {"tool": "search_web", "args": {"query": "prices"}},
          "env": {"placeholder_args": {"amount": 900 + k}}} for k in range(3)]


@pytest.fixture(autouse=True)
def _uploads_in_tmp(tmp_path, settings):
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    vocabulary.forget_stored()
    yield
    vocabulary.forget_stored()


def upload(world, events, capture, name):
    body = "".join(json.dumps(e) + "\n" for e in events).encode()
    with capture(execute=True):
        response = world.as_("aud").client.post("/api/w/acme/uploads", data={
            "file": SimpleUploadedFile(name, body), "format": "jsonl"})
    assert response.status_code == 201, response.content


def formalise(world, english, **more):
    response = world.as_("alice").post("w/acme/formalise", {"english": english, **more})
    assert response.status_code == 200, response.content
    return response.json()


def test_the_refund_sentence_reads_the_refunds_own_amount_with_evidence(
        world, django_capture_on_commit_callbacks):
    upload(world, SUPPORT, django_capture_on_commit_callbacks, "support.jsonl")
    upload(world, OTHER, django_capture_on_commit_callbacks, "web.jsonl")

    body = formalise(world, REFUND)

    assert body["ok"] and body["readings"]
    assert all("placeholder" not in r["formula"] for r in body["readings"])
    first = body["readings"][0]
    assert "tool_call:issue_refund" in first["formula"]
    assert "output.args.amount > 500" in first["formula"]
    amount = next(m for m in body["mapping"] if m["kind"] == "field"
                  and m["tied_to"] == "tool_call:issue_refund")
    assert amount["atom"] == "output.args.amount" and amount["sure"]
    own, other = amount["candidates"][0], amount["candidates"][1]
    assert sorted(own["examples"]) == [45, 120, 800] and own["events"] == 3
    assert other["atom"] == "data.env.placeholder_args.amount"
    assert "never seen on issue_refund" in other["warning"] and other["events"] == 3
    # the approval is nothing the logs show: a new atom, said so, never "found"
    approval = next(m for m in body["mapping"] if "approv" in m["phrase"])
    assert not approval["grounded"] and not approval["sure"]
    assert approval["warning"] == "nothing in your logs produces this: add a labeler"
    # what the reading would flag: the refund of 800, and only it, of the 7 stored sessions
    flags = first["flags"]
    assert flags["sampled"] == 7 and flags["flagged"] == 1
    assert flags["examples"] == [{"session": "t-1", "step": 1}]
    assert body["sample"]["sessions"] == 7


def test_picking_a_candidate_rewrites_every_reading_and_a_reading_that_never_fires_says_so(
        world, django_capture_on_commit_callbacks):
    upload(world, SUPPORT, django_capture_on_commit_callbacks, "support.jsonl")
    upload(world, OTHER, django_capture_on_commit_callbacks, "web.jsonl")
    body = formalise(world, REFUND)
    amount = next(m for m in body["mapping"] if m["kind"] == "field"
                  and m["tied_to"] == "tool_call:issue_refund")

    picked = formalise(world, REFUND,
                       choices={amount["phrase"]: "data.env.placeholder_args.amount"})

    refund_readings = [r for r in picked["readings"] if "tool_call:issue_refund" in r["formula"]]
    assert refund_readings and all("data.env.placeholder_args.amount" in r["formula"]
                                   for r in refund_readings)
    flags = refund_readings[0]["flags"]
    assert flags["flagged"] == 0 and flags["kind"] == "never_fires"
    assert "never fire" in flags["note"]
    mapping = next(m for m in picked["mapping"] if m["phrase"] == amount["phrase"])
    assert mapping["chosen_by_author"] and mapping["atom"] == "data.env.placeholder_args.amount"


def test_a_bad_choice_is_named_not_used(world, django_capture_on_commit_callbacks):
    upload(world, SUPPORT, django_capture_on_commit_callbacks, "support.jsonl")
    body = formalise(world, REFUND, choices={"no such words": "tool_call:x"})
    assert body["rejected_choices"] == ["no phrase 'no such words' in this reading"]


def test_the_page_shows_the_choices_with_their_examples(world,
                                                         django_capture_on_commit_callbacks):
    upload(world, SUPPORT, django_capture_on_commit_callbacks, "support.jsonl")
    upload(world, OTHER, django_capture_on_commit_callbacks, "web.jsonl")
    client = world.as_("alice").client
    page = client.post("/w/acme/rules/formalise", {"english": REFUND},
                       HTTP_HX_REQUEST="true").content.decode()
    assert "Would flag 1 of the 7 newest stored sessions" in page
    assert "never seen on issue_refund" in page
    assert "nothing in your logs produces this: add a labeler" in page
    assert "/w/acme/labelers/?atom=" in page
    assert 'name="choice:' in page
