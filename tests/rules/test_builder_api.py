"""The rule builder over HTTP: the API builds and reads back (422 naming the field, 404 to
outsiders), its options come from the workspace's own logs, and the page builds, refreshes with
htmx, prefills from the query string and creates a draft the way the rules page does."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils.html import escape

from studio.rules.models import Rule
from tests.api.world import Api

pytestmark = pytest.mark.django_db

REFUND_OVER_500 = {"atom": "tool_call:issue_refund",
                   "conditions": [{"path": "output.args.amount", "op": ">", "value": 500}]}
BOUNDED = {"pattern": "bounded_response", "scope": "globally",
           "slots": {"p": REFUND_OVER_500, "q": "tool_call:escalate_to_human"}, "n": 3}
FORMULA = ("G (output.args.amount > 500 & tool_call:issue_refund -> "
           "F[0,3] tool_call:escalate_to_human)")
ENGLISH = ("Every time the agent calls issue_refund with an amount over 500, a call to "
           "escalate_to_human must happen within 3 steps: at that step or one of the next 3.")
QUERY = ("pattern=bounded_response&scope=globally&n=3&p=tool_call:issue_refund"
         "&p_path=output.args.amount&p_op=%3E&p_value=500&q=tool_call:escalate_to_human")


def seed_logs(world) -> None:
    """A live session of acme's agent: refunds with their amounts, an escalation, a user."""
    agent = Api(token=world.token(world.acme))
    events = [
        {"event_id": "e0", "input": "refund me", "data": {"role": "user"}},
        {"event_id": "e1", "output": {"tool": "issue_refund", "args": {"amount": 900}}},
        {"event_id": "e2", "output": {"tool": "escalate_to_human",
                                      "args": {"reason": "large refund"}}},
        {"event_id": "e3", "output": {"tool": "issue_refund", "args": {"amount": 120}},
         "labels": ["angry_customer"]},
    ]
    response = agent.post("w/acme/live/sessions/s1/events", {"events": events})
    assert response.status_code == 200, response.content[:300]


# ---------------------------------------------------------------------------------------------
# The API

def test_the_api_builds_the_rule_and_reads_it_back(world):
    response = world.as_("alice").post("w/acme/rules/build", BOUNDED)

    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["formula"], body["english"]) == (FORMULA, ENGLISH)
    assert (body["pattern"], body["scope"]) == ("bounded_response", "globally")
    # Nothing in this workspace has called either tool yet.
    assert {(w["code"], w["subject"]) for w in body["warnings"]} >= {
        ("unknown_atom", "tool_call:issue_refund"), ("unknown_atom", "tool_call:escalate_to_human"),
        ("unknown_path", "output.args.amount")}


def test_warnings_are_gone_once_the_logs_show_the_events(world):
    seed_logs(world)

    body = world.as_("aud").post("w/acme/rules/build", BOUNDED).json()

    assert body["formula"] == FORMULA
    assert [w for w in body["warnings"] if w["code"].startswith("unknown")] == []


def test_a_scope_and_a_machine_caller(world):
    api = Api(token=world.token(world.acme, roles=["auditor"]))
    body = {"pattern": "precedence", "scope": "after_until",
            "slots": {"p": "tool_call:verify_identity", "q": "tool_call:issue_refund",
                      "start": "role:user", "end": {"atom": "stop_reason:end_turn"}}}

    response = api.post("w/acme/rules/build", body)

    assert response.status_code == 200, response.json()
    assert response.json()["formula"] == (
        "G (role:user & !stop_reason:end_turn -> !tool_call:issue_refund W "
        "(stop_reason:end_turn | tool_call:verify_identity))")
    assert response.json()["english"].startswith(
        "From each user message until the next stop for the reason end_turn, or to the end "
        "of the session if none follows, a call to issue_refund may only happen once")


@pytest.mark.parametrize(("change", "field"), [
    ({"pattern": "sometimes"}, "pattern"),
    ({"scope": "later"}, "scope"),
    ({"n": None}, "n"),
    ({"n": 100_000}, "n"),
    ({"slots": {"p": REFUND_OVER_500}}, "slots.q"),
    ({"slots": {"p": REFUND_OVER_500, "q": "x", "r": "y"}}, "slots.r"),
    ({"slots": {"p": {"atom": "tool_call:issue_refund", "conditions": [
        {"path": "output.args.amount", "op": "≈", "value": 500}]}, "q": "x"}},
     "slots.p.conditions[0].op"),
    ({"slots": {"p": {"conditions": [{"path": "Output.Amount", "op": ">", "value": 5}]},
                "q": "x"}}, "slots.p.conditions[0].path"),
    ({"slots": {"p": {"conditions": [{"path": "data.ok", "op": ">", "value": True}]},
                "q": "x"}}, "slots.p.conditions[0].value"),
    ({"slots": {"p": {"conditions": []}, "q": "x"}}, "slots.p"),
])
def test_a_choice_the_builder_refuses_is_a_422_naming_the_field(world, change, field):
    response = world.as_("alice").post("w/acme/rules/build", {**BOUNDED, **change})

    assert response.status_code == 422, response.json()
    assert response.json()["field"] == field
    assert response.json()["detail"]


def test_outsiders_get_404_and_nobody_gets_in_without_credentials(world):
    oscar = world.as_("oscar")
    assert oscar.post("w/acme/rules/build", BOUNDED).status_code == 404
    assert oscar.get("w/acme/rules/build/options").status_code == 404
    assert oscar.post("w/nope/rules/build", BOUNDED).json() == \
        oscar.post("w/acme/rules/build", BOUNDED).json()
    assert Api().post("w/acme/rules/build", BOUNDED).status_code == 401
    assert Api().get("w/acme/rules/build/options").status_code == 401


def test_a_person_needs_the_csrf_token_to_build(world):
    strict = world.as_("alice", enforce_csrf=True)
    assert strict.post("w/acme/rules/build", BOUNDED).status_code == 403


def test_the_options_come_from_the_workspaces_own_logs(world):
    seed_logs(world)

    options = world.as_("alice").get("w/acme/rules/build/options").json()

    tools = {t["name"]: t for t in options["tools"]}
    assert set(tools) == {"issue_refund", "escalate_to_human"}
    assert [r["atom"] for r in options["roles"]] == ["role:user"]
    assert [label["atom"] for label in options["labels"]] == ["angry_customer"]
    fields = {f["path"]: f for f in options["fields"]}
    assert fields["output.args.amount"]["types"] == ["number"]
    assert fields["output.args.amount"]["ops"][:2] == [">", ">="]
    assert fields["output.args.reason"]["ops"] == ["==", "!="]
    if options["evidence"]:  # each tool's own arguments, from the events that showed them
        assert [a["path"] for a in tools["issue_refund"]["arguments"]] == ["output.args.amount"]
        assert [a["path"] for a in tools["escalate_to_human"]["arguments"]] == [
            "output.args.reason"]
        assert set(tools["issue_refund"]["arguments"][0]["examples"]) <= {900, 120}
    assert {p["name"] for p in options["patterns"]} >= {
        "absence", "existence", "universality", "response", "bounded_response", "precedence",
        "response_chain", "precedence_chain", "at_most", "at_least", "exactly_once"}
    assert [s["name"] for s in options["scopes"]] == [
        "globally", "before", "after", "between", "after_until"]


def test_the_schema_documents_both_routes(world):
    schema = world.as_("alice").get("/api/openapi.json").json()
    assert "post" in schema["paths"]["/api/w/{slug}/rules/build"]
    assert "get" in schema["paths"]["/api/w/{slug}/rules/build/options"]


# ---------------------------------------------------------------------------------------------
# The page

def page_client(world, who: str = "alice") -> Client:
    client = Client()
    client.force_login(world.users[who])
    return client


def test_the_page_prefills_from_the_query_and_reads_the_rule_back(world):
    seed_logs(world)

    page = page_client(world).get(f"/w/acme/rules/build/?{QUERY}")

    assert page.status_code == 200
    html = page.content.decode()
    assert ENGLISH in html
    assert escape(FORMULA) in html
    assert re.search(r'<option value="bounded_response" selected>', html)
    assert re.search(r'<option value="tool_call:issue_refund" selected>calls issue_refund',
                     html)
    assert re.search(r'<option value="output.args.amount" selected>amount', html)
    assert 'name="p_value" value="500"' in html
    assert "<script>" not in html and "style=" not in html  # the CSP allows neither


def test_the_english_panels_events_alone_open_a_response(world):
    html = page_client(world).get(
        "/w/acme/rules/build/?p=tool_call:issue_refund&q=tool_call:escalate_to_human"
    ).content.decode()

    assert '<option value="response" selected>' in html
    assert "Every time the agent calls issue_refund, a call to escalate_to_human must follow" \
        in html


def test_an_empty_builder_asks_for_the_events(world):
    html = page_client(world).get("/w/acme/rules/build/").content.decode()
    assert "an event for <strong>p</strong> and an event for <strong>q</strong>" in html


def test_htmx_gets_the_builder_partial(world):
    response = page_client(world).post(
        "/w/acme/rules/build/", {"pattern": "absence", "scope": "before", "p": "role:user",
                                 "end": "tool_call:verify_identity"}, HTTP_HX_REQUEST="true")

    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="builder">') and "<html" not in html
    assert ("Before the first call to verify_identity (in sessions that have one), a user "
            "message must never happen.") in html
    assert "F tool_call:verify_identity -&gt; !role:user W tool_call:verify_identity" in html


def test_a_refused_condition_is_shown_where_it_was_made(world):
    html = page_client(world).post("/w/acme/rules/build/", {
        "pattern": "existence", "p": "tool_call:issue_refund", "p_path": "output.args.amount",
        "p_op": ">", "p_value": "true"}).content.decode()

    assert "true has no order: compare it with == or !=" in html
    assert 'id="built-english"' not in html


def test_create_this_rule_makes_a_draft_and_opens_it(world):
    client = page_client(world)
    data = dict(pair.split("=", 1) for pair in QUERY.split("&"))
    data["p_op"] = ">"

    response = client.post("/w/acme/rules/build/", {**data, "action": "create",
                                                    "name": "escalate large refunds"})

    rule = Rule.objects.get(workspace=world.acme, name="escalate large refunds")
    assert response.status_code == 302
    assert response["Location"] == f"/w/acme/rules/{rule.id}/"
    version = rule.versions.get()
    assert (version.formula, version.english, version.status) == (FORMULA, ENGLISH, "draft")
    assert rule.description == ENGLISH
    assert version.counting == "per_instance"  # the default for G phi, as the rules page sets
    assert version.author == world.alice


def test_create_without_a_name_uses_the_suggested_one_and_keeps_the_authors_words(world):
    page_client(world).post("/w/acme/rules/build/", {
        "pattern": "at_most", "n": "2", "p": "tool_call:retry", "action": "create",
        "description": "Do not retry more than twice."})

    rule = Rule.objects.get(workspace=world.acme)
    assert rule.name == "at most 2: retry"
    assert rule.description == "Do not retry more than twice."
    assert rule.versions.get().english == "A call to retry may happen at most twice in the session."


def test_a_name_taken_is_refused_on_the_page(world):
    client = page_client(world)
    form = {"pattern": "absence", "p": "tool_call:rm", "name": "no rm", "action": "create"}
    assert client.post("/w/acme/rules/build/", form).status_code == 302

    again = client.post("/w/acme/rules/build/", form)

    assert again.status_code == 422
    assert "already has a rule named" in again.content.decode()
    assert Rule.objects.filter(workspace=world.acme).count() == 1


def test_only_authors_create_and_outsiders_see_nothing(world):
    form = {"pattern": "absence", "p": "tool_call:rm", "action": "create"}
    auditor = page_client(world, "aud")
    assert auditor.get("/w/acme/rules/build/").status_code == 200
    assert "Create this rule" not in auditor.get("/w/acme/rules/build/").content.decode()
    assert auditor.post("/w/acme/rules/build/", form).status_code == 403
    outsider = page_client(world, "oscar")
    assert outsider.get("/w/acme/rules/build/").status_code == 404
    assert outsider.post("/w/acme/rules/build/", form).status_code == 404
    assert Rule.objects.count() == 0


def test_the_rules_page_links_to_the_builder(world):
    html = page_client(world).get("/w/acme/rules/").content.decode()
    assert html.count('href="/w/acme/rules/build/"') == 1
