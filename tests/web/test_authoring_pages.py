"""Authoring aids through real requests: English to LTL on the rules page and in the API, and
the review aids of a version (English, example traces, warnings, equivalence with the version
before), each checked against the finite-trace oracle rather than against fixed strings."""

import html

import pytest
from django.test import Client

from studio.logic.finite import holds
from studio.logic.parser import parse
from studio.logic.review import distinguishing_trace
from studio.rules import services
from studio.workspaces.models import Role
from studio.workspaces.services import add_member, create_token, create_user, create_workspace


@pytest.fixture
def team(people, sign_in):
    author, reviewer = people["ann"], people["rob"]
    workspace = create_workspace("Kitchen", owner=author, roles=(Role.AUTHOR,))
    add_member(workspace, reviewer, Role.REVIEWER)
    return {"ws": workspace, "author": author, "ann": sign_in(author), "rob": sign_in(reviewer),
            "eve": sign_in(people["eve"])}


def test_english_becomes_a_formula_that_starts_a_rule(team):
    answer = team["ann"].post("/w/kitchen/rules/formalise",
                              {"english": "Never drop the knife.", "engine": "offline"},
                              HTTP_HX_REQUEST="true")
    page = answer.content.decode()
    assert answer.status_code == 200 and "Reads as" in page
    start = page.split('href="/w/kitchen/rules/?', 1)[1].split('"', 1)[0]
    form = team["ann"].get("/w/kitchen/rules/?" + start.replace("&amp;", "&")).content.decode()
    # The create form is prefilled with a formula equivalent to "never drop the knife".
    formula = form.split('id="id_formula"', 1)[1].split(">", 1)[1].split("</textarea>", 1)[0]
    assert distinguishing_trace(parse(html.unescape(formula)), parse("G !drop_knife")) is None


def test_english_it_cannot_read_names_the_words(team):
    page = team["ann"].post("/w/kitchen/rules/formalise",
                            {"english": "blorp the frobnicator sideways"}).content.decode()
    assert "could not place" in page and "frobnicator" in page and "<mark>" in page
    empty = team["ann"].post("/w/kitchen/rules/formalise", {"english": "  "}).content.decode()
    assert "write the rule in English first" in empty
    engine = team["ann"].post("/w/kitchen/rules/formalise",
                              {"english": "never p", "engine": "gpt"}).content.decode()
    assert "unknown engine" in engine


def test_review_aids_of_a_version_and_its_change_from_the_one_before(team):
    rule = services.create_rule(team["ws"], team["author"], "look", "G(take -> F examine)")
    version = rule.versions.get()
    services.update_draft(version, team["author"], formula="G(take -> F examine)")
    services.submit_for_review(version, team["author"], "warnings known")
    services.reject(version, _reviewer(team), "examine right away")
    second = services.new_version(rule, team["author"], formula="G(take -> X examine)")

    page = team["rob"].get(f"/w/kitchen/rules/{rule.id}/review-aids?v={second.number}",
                           HTTP_HX_REQUEST="true").content.decode()
    assert "Whenever a step is labelled take, the next step must be labelled examine" in page
    assert "Not equivalent to version 1" in page
    # The page's example traces really satisfy / violate the formula (the oracle says so).
    api = _api(team)
    aids = api.get(f"/api/w/kitchen/rules/{rule.id}/versions/{second.number}/review").json()
    formula = parse("G(take -> X examine)")
    assert holds(formula, [(set(s), {}) for s in aids["satisfying"]["steps"]])
    assert not holds(formula, [(set(s), {}) for s in aids["violating"]["steps"]])
    diff = aids["equivalence"]
    assert diff["this_holds"] != diff["other_holds"]
    trace = [(set(s), {}) for s in diff["steps"]]
    assert holds(formula, trace) == diff["this_holds"]
    assert holds(parse("G(take -> F examine)"), trace) == diff["other_holds"]


def test_warnings_for_rules_that_cannot_fail_or_hold(team):
    api = _api(team)
    never = api.post("/api/w/kitchen/formulas/review", {"formula": "G(p & !p)"},
                     content_type="application/json").json()
    assert [w["kind"] for w in never["warnings"]] == ["unsatisfiable"]
    assert never["satisfying"]["steps"] is None and never["satisfying"]["exact"]
    vacuous = api.post("/api/w/kitchen/formulas/review",
                       {"formula": "G(p -> F q) & G !p"},
                       content_type="application/json").json()
    assert "vacuous" in [w["kind"] for w in vacuous["warnings"]]
    always = api.post("/api/w/kitchen/formulas/review", {"formula": "G((a & !a) -> F b)"},
                      content_type="application/json").json()
    assert [w["kind"] for w in always["warnings"]] == ["valid"]
    bad = api.post("/api/w/kitchen/formulas/review", {"formula": "G(p ->"},
                   content_type="application/json")
    assert bad.status_code == 422 and "line 1, column" in bad.json()["detail"]


def test_authoring_routes_are_for_members_only(team):
    assert team["eve"].post("/w/kitchen/rules/formalise", {"english": "never p"}).status_code \
        == 404
    outsider_api = _api_for(create_workspace("Else", owner=create_user("zed")))
    assert outsider_api.post("/api/w/kitchen/formalise", {"english": "never p"},
                             content_type="application/json").status_code == 404


def _reviewer(team):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username="rob")


def _api(team):
    return _api_for(team["ws"])


def _api_for(workspace):
    # The owner's token, with the owner's roles (a token acts only with roles its creator holds).
    owner = workspace.memberships.first().user
    held = list(workspace.memberships.filter(user=owner).values_list("role", flat=True))
    _, secret = create_token(workspace, "t", held, owner)
    return Client(headers={"Authorization": f"Bearer {secret}"})
