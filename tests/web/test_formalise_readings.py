"""English to LTL through real requests, grounded in what the workspace's logs contain: the
mapping of phrases to atoms, several readings with their English and a trace telling them
apart (checked with the finite-trace oracle), a proposed name, and a button per reading."""

import html

import pytest
from django.test import Client

from studio.logic.finite import holds
from studio.logic.parser import parse
from studio.logic.review import distinguishing_trace
from studio.traces.models import VocabularyEntry, VocabularyKind
from studio.workspaces.models import Role
from studio.workspaces.services import create_token, create_workspace


@pytest.fixture
def bank(people, sign_in):
    author = people["ann"]
    workspace = create_workspace("Bank", owner=author, roles=(Role.AUTHOR,))
    for kind, name, json_type in [
            (VocabularyKind.BUILTIN, "tool_call:send_money", ""),
            (VocabularyKind.BUILTIN, "tool_call:verify_identity", ""),
            (VocabularyKind.BUILTIN, "tool_call:get_balance", ""),
            (VocabularyKind.PATH, "output.args.amount", "number")]:
        VocabularyEntry.objects.create(workspace=workspace, kind=kind, name=name,
                                       json_type=json_type)
    _, secret = create_token(workspace, "t", [Role.AUTHOR], author)
    return {"ws": workspace, "api": Client(headers={"Authorization": f"Bearer {secret}"}),
            "page": sign_in(author)}


def _formalise(bank, english):
    answer = bank["api"].post("/api/w/bank/formalise", {"english": english},
                              content_type="application/json")
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_phrases_are_grounded_in_the_workspaces_tools_and_fields(bank):
    body = _formalise(bank, "Never transfer more than 10000.")
    assert body["ok"]
    # a forbidden amount is read as the limit it sets: a transfer must stay within 10000
    expected = parse("G (tool_call:send_money -> output.args.amount <= 10000)")
    assert distinguishing_trace(parse(body["formula"]), expected) is None
    mapping = {m["phrase"]: (m["atom"], m["grounded"]) for m in body["mapping"]}
    assert ("tool_call:send_money", True) in mapping.values()
    assert ("output.args.amount", True) in mapping.values()
    assert body["name"] and body["name"] == body["name"].lower() and " " not in body["name"]


def test_a_phrase_nothing_in_the_logs_matches_is_invented_and_said_so(bank):
    body = _formalise(bank, "The agent must never delete the audit trail.")
    assert body["ok"]
    invented = [m for m in body["mapping"] if not m["grounded"]]
    assert invented and all(m["atom"] in body["formula"] for m in invented)
    assert "tool_call:" not in body["formula"]


def test_an_ambiguous_rule_comes_with_each_reading_and_a_trace_telling_them_apart(bank):
    body = _formalise(bank, "Do not send money before verifying the identity.")
    readings = body["readings"]
    assert len(readings) >= 2
    assert readings[0]["formula"] == body["formula"]
    for k, reading in enumerate(readings):
        assert reading["english"] and reading["why"]
        this, other = parse(reading["formula"]), parse(readings[reading["against"]]["formula"])
        assert reading["against"] != k
        trace = [(set(step), {}) for step in reading["trace"]]
        # The trace really tells the two readings apart.
        assert holds(this, trace) != holds(other, trace)
    # Strict and non-strict precedence are both offered.
    offered = [parse(r["formula"]) for r in readings]
    for meant in ("!tool_call:send_money W tool_call:verify_identity",
                  "!tool_call:send_money W (tool_call:verify_identity & !tool_call:send_money)"):
        assert any(distinguishing_trace(f, parse(meant)) is None for f in offered), meant


def test_a_plain_rule_has_one_reading_with_its_english(bank):
    body = _formalise(bank, "Never send money.")
    assert [r["formula"] for r in body["readings"]] == ["G !tool_call:send_money"]
    assert body["readings"][0]["trace"] == [] and body["readings"][0]["against"] is None
    assert "the agent calls send_money" in body["readings"][0]["english"]


def test_bad_english_still_answers_the_same_shape(bank):
    body = _formalise(bank, "blorp the frobnicator sideways")
    assert not body["ok"] and body["readings"] == [] and body["message"]
    assert bank["api"].post("/api/w/bank/formalise", {"english": " "},
                            content_type="application/json").status_code == 422


def test_the_page_shows_the_mapping_and_a_button_per_reading_that_fills_the_editor(bank):
    page = bank["page"].post("/w/bank/rules/formalise",
                             {"english": "Do not send money before verifying the identity."},
                             HTTP_HX_REQUEST="true").content.decode()
    # each phrase with the entry it became and why (the words it shares with the entry)
    assert 'name="choice:' in page and "tool_call:send_money" in page
    assert "with the phrase" in page
    assert "Use reading 1" in page and "Use reading 2" in page
    links = [part.split('"', 1)[0] for part in page.split('href="/w/bank/rules/?')[1:]]
    formulas = set()
    for link in links:
        form = bank["page"].get("/w/bank/rules/?" + html.unescape(link)).content.decode()
        formula = form.split('id="id_formula"', 1)[1].split(">", 1)[1].split("</textarea>", 1)[0]
        formulas.add(html.unescape(formula).strip())
        name_input = form.split('id="id_name"', 1)[1].split(">", 1)[0]
        assert 'value="' in name_input and 'value=""' not in name_input
    assert len(formulas) == len(links) >= 2
