"""Labeler and rule-set pages through real requests: declaring labelers, trying them on an
event, grouping approved rules into sets and marking one live; who may do what."""

import json

import pytest
from django.test import Client

from studio.rules import services
from studio.rules.models import Labeler, RuleSet
from studio.workspaces.models import AuditLogEntry, Role, Workspace
from studio.workspaces.services import add_member, create_workspace


@pytest.fixture
def team(people, sign_in):
    author, reviewer, outsider = people["ann"], people["rob"], people["eve"]
    workspace = create_workspace("Payments", owner=author, roles=(Role.AUTHOR,))
    add_member(workspace, reviewer, Role.REVIEWER)
    create_workspace("Elsewhere", owner=outsider)
    return {"ws": workspace, "ann": author, "rob": reviewer, "author": sign_in(author),
            "reviewer": sign_in(reviewer), "outsider": sign_in(outsider)}


def approved_rule(team, name, formula):
    """A rule whose first version the reviewer approved (written by the author)."""
    rule = services.create_rule(team["ws"], team["ann"], name, formula)
    version = services.submit_for_review(rule.versions.get(), team["ann"], "warnings known")
    services.approve(version, team["rob"])
    return rule


REGEX_LABELER = {"action": "create", "atom": "mentions_drop", "kind": "regex",
                 "path": "output", "pattern": r"\bdrop\b", "flags": "i",
                 "description": "the agent talks about dropping something", "enabled": "on"}


def test_a_regex_labeler_added_on_the_page_makes_the_rule_editor_see_its_atom(team):
    check = {"formula": "G !mentions_drop"}
    before = team["author"].post("/w/payments/formulas/check", check).content.decode()
    assert "no labeler" in before

    response = team["author"].post("/w/payments/labelers/", REGEX_LABELER)
    labeler = Labeler.objects.get(workspace=team["ws"], atom="mentions_drop")
    assert response.status_code == 302
    assert response["Location"] == f"/w/payments/labelers/{labeler.id}/"
    assert labeler.kind == "regex" and labeler.enabled
    assert labeler.config == {"path": "output", "pattern": r"\bdrop\b", "flags": "i"}

    after = team["author"].post("/w/payments/formulas/check", check).content.decode()
    assert "no labeler" not in after and "<td>a labeler</td>" in after

    listing = team["reviewer"].get("/w/payments/labelers/").content.decode()
    assert "mentions_drop" in listing and r"output matches /\bdrop\b/i" in listing


def test_the_list_says_which_approved_rules_read_each_atom(team):
    team["author"].post("/w/payments/labelers/", REGEX_LABELER)
    approved_rule(team, "no_drops", "G !mentions_drop")
    approved_rule(team, "pay_then_stop", "G(tool_call:pay -> F stop_reason:end_turn) & G !leak")
    page = team["author"].get("/w/payments/labelers/").content.decode()
    labeler = Labeler.objects.get(atom="mentions_drop")
    row = page[page.index(f"/labelers/{labeler.id}/"):]
    assert "no_drops" in row[:row.index("</tr>")]
    builtins = page[page.index("Built-in atoms"):page.index("Atoms the approved rules read")]
    assert builtins.count("pay_then_stop") == 2  # tool_call: and stop_reason:
    read = page[page.index("Atoms the approved rules read"):]
    leak = read[read.index("<code>leak</code>"):]
    assert "nothing" in leak[:leak.index("</tr>")]


def test_a_bad_regex_is_refused_naming_the_pattern_and_nothing_is_saved(team):
    response = team["author"].post("/w/payments/labelers/",
                                   {**REGEX_LABELER, "pattern": "(unclosed"})
    page = response.content.decode()
    assert response.status_code == 422
    assert 'href="#id_pattern">Pattern</a>: not a valid regular expression' in page
    assert 'id="id_pattern" name="pattern" value="(unclosed"' in page  # the input is kept
    assert 'aria-invalid="true"' in page
    assert not Labeler.objects.exists()
    assert not AuditLogEntry.objects.filter(action="labeler.created").exists()


@pytest.mark.parametrize("changes, field, words", [
    ({"path": "$.output"}, "path", "is not a JSON path"),
    ({"path": "output..text"}, "path", "is not a JSON path"),
    ({"kind": "field", "path": "output.args.amount", "op": "=~", "value": "5"}, "op",
     "must be one of"),
    ({"kind": "field", "path": "output.args.amount", "op": ">", "value": ""}, "value",
     "a value to compare with is required"),
    ({"kind": "field", "path": "output.args", "op": "==", "value": "[1, 2]"}, "value",
     "must be a string, number, boolean or null"),
    ({"flags": "x"}, "flags", "unknown flags x"),
    ({"atom": " "}, "atom", "an atom name is required"),
])
def test_bad_settings_are_refused_naming_the_field(team, changes, field, words):
    response = team["author"].post("/w/payments/labelers/", {**REGEX_LABELER, **changes})
    page = response.content.decode()
    assert response.status_code == 422
    summary = page[page.index('class="error-summary"'):page.index("</div>", page.index(
        'class="error-summary"'))]
    assert f'href="#id_{field}"' in summary and words in summary
    assert not Labeler.objects.exists()


def test_a_field_labeler_reads_numbers_and_text_as_typed(team):
    team["author"].post("/w/payments/labelers/", {
        "action": "create", "atom": "large_payment", "kind": "field",
        "path": "output.args.amount", "op": ">", "value": "10000", "pattern": "ignored"})
    team["author"].post("/w/payments/labelers/", {
        "action": "create", "atom": "passed", "kind": "field", "path": "data.status",
        "op": "==", "value": "passed"})
    team["author"].post("/w/payments/labelers/", {
        "action": "create", "atom": "code_42", "kind": "field", "path": "data.code",
        "op": "==", "value": '"42"'})
    configs = {l.atom: l.config for l in Labeler.objects.all()}
    assert configs == {
        "large_payment": {"path": "output.args.amount", "op": ">", "value": 10000},
        "passed": {"path": "data.status", "op": "==", "value": "passed"},
        "code_42": {"path": "data.code", "op": "==", "value": "42"}}
    # Editing shows each value so that saving it unchanged keeps its kind.
    code = Labeler.objects.get(atom="code_42")
    page = team["author"].get(f"/w/payments/labelers/{code.id}/").content.decode()
    assert 'name="value" value="&quot;42&quot;"' in page


def test_trying_an_event_shows_the_atoms_it_gets(team):
    team["author"].post("/w/payments/labelers/", REGEX_LABELER)
    team["author"].post("/w/payments/labelers/", {
        "action": "create", "atom": "large_payment", "kind": "field",
        "path": "output.args.amount", "op": ">", "value": "10000", "enabled": "on"})
    team["author"].post("/w/payments/labelers/", {  # unticked box: added disabled
        "action": "create", "atom": "any_payment", "kind": "field",
        "path": "output.args.amount", "op": ">", "value": "0"})
    event = {"output": {"tool": "send_money", "args": {"amount": 12000}},
             "data": {"stop_reason": "end_turn"}, "labels": ["approved"]}
    # Any member may try (the reviewer cannot add labelers).
    response = team["reviewer"].post("/w/payments/labelers/", {
        "action": "try", "mode": "json", "event": json.dumps(event)}, HTTP_HX_REQUEST="true")
    part = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in part  # a partial for htmx
    found = part[part.index("Atoms true for this event"):part.index("</p>")]
    for atom in ("approved", "large_payment", "stop_reason:end_turn", "tool_call:send_money"):
        assert f"<code class=\"atom\">{atom}</code>" in found
    assert "mentions_drop" not in found and "any_payment" not in found
    assert "would, but the labeler is disabled" in part

    # Text is tried as the agent's output; without htmx the whole page answers.
    page = team["reviewer"].post("/w/payments/labelers/", {
        "action": "try", "mode": "output", "event": "We will DROP the table"}).content.decode()
    assert "<html" in page
    found = page[page.index("Atoms true for this event"):]
    assert '<code class="atom">mentions_drop</code>' in found[:found.index("</p>")]


def test_broken_json_is_answered_with_its_line_and_column(team):
    response = team["author"].post("/w/payments/labelers/", {
        "action": "try", "mode": "json", "event": '{"output": "hi",\r\n  "data": }'},
        HTTP_HX_REQUEST="true")
    part = response.content.decode()
    assert response.status_code == 200
    assert "Not valid JSON: line 2, column 11: Expecting value." in part
    assert "<mark>}</mark>" in part
    not_object = team["author"].post("/w/payments/labelers/", {
        "action": "try", "mode": "json", "event": "[1, 2]"}, HTTP_HX_REQUEST="true")
    assert "not a list" in not_object.content.decode()


def test_editing_disabling_and_enabling_a_labeler(team):
    team["author"].post("/w/payments/labelers/", REGEX_LABELER)
    labeler = Labeler.objects.get()
    url = f"/w/payments/labelers/{labeler.id}/"
    edit = {**REGEX_LABELER, "action": "save", "pattern": r"\b(drop|delete)\b"}
    assert team["author"].post(url, edit).status_code == 302
    labeler.refresh_from_db()
    assert labeler.config["pattern"] == r"\b(drop|delete)\b"
    # A broken edit changes nothing.
    bad = team["author"].post(url, {**edit, "pattern": "[oops"})
    assert bad.status_code == 422 and "Pattern</a>: not a valid regular expression" in (
        bad.content.decode())
    labeler.refresh_from_db()
    assert labeler.config["pattern"] == r"\b(drop|delete)\b"

    assert team["author"].post(url, {"action": "disable"}).status_code == 302
    labeler.refresh_from_db()
    assert not labeler.enabled
    check = team["author"].post("/w/payments/formulas/check", {"formula": "G !mentions_drop"})
    assert "no labeler" in check.content.decode()  # a disabled labeler produces nothing
    team["author"].post(url, {"action": "enable"})
    labeler.refresh_from_db()
    assert labeler.enabled


def test_a_rule_set_is_created_given_an_approved_rule_and_made_live(team):
    pay = approved_rule(team, "pay_first", "!ship W paid")
    draft = services.create_rule(team["ws"], team["ann"], "draft_rule", "G !leak")
    response = team["author"].post("/w/payments/rule-sets/", {
        "name": "checkout", "description": "what checkout must do"})
    rule_set = RuleSet.objects.get(workspace=team["ws"], name="checkout")
    url = f"/w/payments/rule-sets/{rule_set.id}/"
    assert response.status_code == 302 and response["Location"] == url
    assert not rule_set.live and not rule_set.rules.exists()

    page = team["author"].get(url).content.decode()
    assert "audits with version 1" in page and "nothing approved yet" in page
    assert team["author"].post(url, {"action": "rules",
                                      "rule_ids": [str(pay.id)]}).status_code == 302
    assert list(rule_set.rules.all()) == [pay]

    listing = team["author"].get("/w/payments/rule-sets/").content.decode()
    assert "No rule set is live" in listing
    assert team["author"].post(url, {"action": "live", "live": "1"}).status_code == 302
    rule_set.refresh_from_db()
    assert rule_set.live
    listing = team["author"].get("/w/payments/rule-sets/").content.decode()
    assert "monitored against the live set" in listing and "pay_first" in listing
    # The same click twice leaves it live (the button says which state it wants).
    team["author"].post(url, {"action": "live", "live": "1"})
    rule_set.refresh_from_db()
    assert rule_set.live
    team["author"].post(url, {"action": "live", "live": "0"})
    rule_set.refresh_from_db()
    assert not rule_set.live

    # Removing every rule: no boxes ticked.
    team["author"].post(url, {"action": "rules"})
    assert not rule_set.rules.exists()
    # A rule of another workspace reads like one that does not exist.
    elsewhere_rule = services.create_rule(Workspace.objects.get(slug="elsewhere"), None,
                                          "theirs", "G !x")
    refused = team["author"].post(url, {"action": "rules", "rule_ids": [str(elsewhere_rule.id)]})
    assert refused.status_code == 422 and f"no rule with id {elsewhere_rule.id}" in (
        refused.content.decode())
    assert not rule_set.rules.exists()
    assert draft.id  # the draft stays selectable, never audited until approved


def test_creating_a_rule_set_with_rules_and_live_at_once_and_a_taken_name(team):
    pay = approved_rule(team, "pay_first", "!ship W paid")
    team["author"].post("/w/payments/rule-sets/", {"name": "live set", "rule_ids": [pay.id],
                                                   "live": "on"})
    rule_set = RuleSet.objects.get(name="live set")
    assert rule_set.live and list(rule_set.rules.all()) == [pay]
    again = team["author"].post("/w/payments/rule-sets/", {"name": "live set"})
    assert again.status_code == 422 and "already has a rule set named" in again.content.decode()
    assert RuleSet.objects.count() == 1


def test_members_without_the_author_role_read_but_change_nothing(team):
    team["author"].post("/w/payments/labelers/", REGEX_LABELER)
    labeler = Labeler.objects.get()
    rule_set = services.create_rule_set(team["ws"], team["ann"], "checkout")
    reviewer = team["reviewer"]

    page = reviewer.get("/w/payments/labelers/").content.decode()
    assert "Only members with the author role add or change labelers" in page
    assert "your role here: reviewer" in page and 'name="pattern"' not in page
    assert "Try it" in page
    assert reviewer.post("/w/payments/labelers/", {**REGEX_LABELER, "atom": "x"}
                         ).status_code == 403
    assert "Only members with the author role" in reviewer.get(
        f"/w/payments/labelers/{labeler.id}/").content.decode()
    assert reviewer.post(f"/w/payments/labelers/{labeler.id}/",
                         {"action": "disable"}).status_code == 403
    labeler.refresh_from_db()
    assert labeler.enabled and Labeler.objects.count() == 1

    page = reviewer.get("/w/payments/rule-sets/").content.decode()
    assert "Only members with the author role create and change rule sets" in page
    assert reviewer.post("/w/payments/rule-sets/", {"name": "mine"}).status_code == 403
    url = f"/w/payments/rule-sets/{rule_set.id}/"
    page = reviewer.get(url).content.decode()
    assert "Only members with the author role change rule sets" in page
    assert reviewer.post(url, {"action": "live", "live": "1"}).status_code == 403
    rule_set.refresh_from_db()
    assert not rule_set.live and RuleSet.objects.count() == 1


def test_outsiders_get_404_everywhere(team):
    team["author"].post("/w/payments/labelers/", REGEX_LABELER)
    labeler = Labeler.objects.get()
    rule_set = services.create_rule_set(team["ws"], team["ann"], "checkout")
    outsider = team["outsider"]
    for url in ("/w/payments/labelers/", f"/w/payments/labelers/{labeler.id}/",
                "/w/payments/rule-sets/", f"/w/payments/rule-sets/{rule_set.id}/"):
        assert outsider.get(url).status_code == 404, url
        assert outsider.post(url, {"action": "try", "event": "{}"}).status_code == 404, url
    # Ids of one workspace are not found through another, even by its own members.
    assert outsider.get(f"/w/elsewhere/labelers/{labeler.id}/").status_code == 404
    assert outsider.get(f"/w/elsewhere/rule-sets/{rule_set.id}/").status_code == 404
    assert Client().get("/w/payments/labelers/").status_code == 302  # sign in first


def test_pages_carry_no_inline_script_or_style(team):
    team["author"].post("/w/payments/labelers/", REGEX_LABELER)
    labeler = Labeler.objects.get()
    rule_set = services.create_rule_set(team["ws"], team["ann"], "checkout")
    for url in ("/w/payments/labelers/", f"/w/payments/labelers/{labeler.id}/",
                "/w/payments/rule-sets/", f"/w/payments/rule-sets/{rule_set.id}/"):
        page = team["author"].get(url).content.decode()
        assert " style=" not in page and "<style" not in page, url
        assert "<script>" not in page and " on" + "click=" not in page, url
        assert "rules-setup.css" in page, url
    rules = team["author"].get("/w/payments/rules/").content.decode()
    assert 'href="/w/payments/labelers/"' in rules and 'href="/w/payments/rule-sets/"' in rules


def test_an_llm_labeler_is_declared_on_the_page_and_its_mistakes_name_the_field(team):
    base = {"action": "create", "atom": "leaks_secret", "kind": "llm",
            "instruction": "the agent reveals a password or an API key",
            "fields": "output, data.reply", "model": "", "batch_size": "8",
            "description": "secrets leaked", "enabled": "on"}
    bad = team["author"].post("/w/payments/labelers/", {**base, "batch_size": "lots"})
    assert bad.status_code == 422
    assert "Steps per request" in bad.content.decode()
    empty = team["author"].post("/w/payments/labelers/", {**base, "instruction": " "})
    assert empty.status_code == 422 and "When the atom holds" in empty.content.decode()
    created = team["author"].post("/w/payments/labelers/", base)
    assert created.status_code == 302
    labeler = Labeler.objects.get(atom="leaks_secret")
    assert (labeler.kind, labeler.description) == ("llm", "secrets leaked")
    assert labeler.config == {"description": "the agent reveals a password or an API key",
                              "fields": ["output", "data.reply"], "batch_size": 8}
    page = team["author"].get(f"/w/payments/labelers/{labeler.id}/").content.decode()
    assert "the agent reveals a password or an API key" in page and 'value="8"' in page
