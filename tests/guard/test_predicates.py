"""A rule set's model predicates over real HTTP requests and on the model page: stored,
audit-logged, a relearn with them; the learned model's alarm quality and proposals in the API and
on the page."""

from __future__ import annotations

import json
import random

import pytest
from django.test import Client
from django.urls import reverse

from studio.guard import learning
from studio.guard.models import LearnedRiskModel, ModelPredicates, ModelStatus
from studio.rules.models import RuleSet
from studio.workspaces.models import AuditLogEntry, Role
from studio.workspaces.services import add_member, create_user
from tests.audits.helpers import add_rule, add_sessions, make_team
from tests.risk.test_predicates import KNIFE_RULES, knife_session

pytestmark = pytest.mark.django_db

TO_CUT = {"kind": "field", "path": "data.to_cut", "op": ">", "value": 0}


@pytest.fixture
def team(db):
    team = make_team("knives")
    ruleset = RuleSet.objects.create(workspace=team.workspace, name="kitchen", live=True)
    for name, formula in KNIFE_RULES:
        add_rule(team, name, formula, rule_set=ruleset)
    rng = random.Random(4)
    add_sessions(team, {f"ep-{i:03d}": knife_session(rng) for i in range(300)})
    team.ruleset = ruleset
    return team


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api(team) -> str:
    return f"/api/w/{team.workspace.slug}/rule-sets/{team.ruleset.pk}/guard-predicates"


def put(client, team, predicates):
    return client.put(api(team), data=json.dumps({"predicates": predicates}),
                      content_type="application/json")


def test_the_api_stores_predicates_logs_them_and_relearns_with_them(
        team, django_capture_on_commit_callbacks):
    author = client_for(team.author)
    assert author.get(api(team)).json()["predicates"] == []
    # A first model, without predicates: the proposals name the hidden one.
    with django_capture_on_commit_callbacks(execute=True):
        first = learning.request_model(team.workspace, team.author)
    first.refresh_from_db()
    assert first.status == ModelStatus.READY, first.error
    model = author.get(f"/api/w/{team.workspace.slug}/guard/model").json()["model"]
    assert model["id"] == first.pk and model["predicates"] == []
    assert model["proposals"][0]["predicate"] == TO_CUT
    assert model["proposals"][0]["confirmed"] is True
    assert model["proposals"][0]["sentence"].startswith("After take knife, where data.to_cut")
    before = model["quality"]
    assert before["horizon"] == 4 and before["threshold"] == 0.5 and before["sessions"] == 150
    # Adding it: stored, logged, and the model is learned again with it.
    with django_capture_on_commit_callbacks(execute=True):
        answer = put(author, team, [TO_CUT])
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["predicates"][0]["name"] == "data.to_cut > 0"
    assert body["predicates"][0]["words"] == "data.to_cut is above 0"
    assert ModelPredicates.objects.get(ruleset=team.ruleset).predicates == [TO_CUT]
    entry = AuditLogEntry.objects.filter(action="guard_predicates.set").get()
    assert entry.actor == team.author and entry.details["added"] == ["data.to_cut > 0"]
    second = LearnedRiskModel.objects.order_by("-id").first()
    assert second.pk != first.pk and second.status == ModelStatus.READY, second.error
    assert second.reason == "the model's predicates changed"
    after = author.get(f"/api/w/{team.workspace.slug}/guard/model").json()["model"]
    assert after["id"] == second.pk and after["predicates"] == [TO_CUT]
    assert TO_CUT not in [p["predicate"] for p in after["proposals"]]
    assert after["quality"]["steps"] == before["steps"]
    assert after["quality"]["precision"] > before["precision"] + 0.1
    # The guard's model now reads the predicate: two knife pickups, two risks.
    loaded = learning.load_model(second.pk)
    assert [p.name for p in loaded.abstraction.predicates] == ["data.to_cut > 0"]
    # Putting the same list again changes nothing and logs nothing.
    with django_capture_on_commit_callbacks(execute=True):
        put(author, team, [TO_CUT])
    assert AuditLogEntry.objects.filter(action="guard_predicates.set").count() == 1
    assert LearnedRiskModel.objects.count() == 2


def test_a_predicate_that_does_not_read_is_named_and_roles_and_workspaces_are_kept(team):
    author = client_for(team.author)
    bad = put(author, team, [TO_CUT, {"kind": "field", "path": "data.to_cut", "op": "~",
                                      "value": 1}])
    assert bad.status_code == 422
    assert "predicates[1].op" in bad.content.decode()
    assert not ModelPredicates.objects.exists()
    assert put(client_for(team.auditor), team, [TO_CUT]).status_code == 403
    assert client_for(team.outsider).get(api(team)).status_code == 404
    assert put(client_for(team.outsider), team, [TO_CUT]).status_code == 404
    other = f"/api/w/{team.workspace.slug}/rule-sets/999999/guard-predicates"
    assert author.get(other).status_code == 404
    assert client_for(team.outsider).get(
        f"/api/w/{team.workspace.slug}/guard/model").status_code == 404
    admin = create_user("knife-admin")
    add_member(team.workspace, admin, Role.ADMIN)
    assert put(client_for(admin), team, [TO_CUT]).status_code == 200
    assert not LearnedRiskModel.objects.exists()   # none learned before: the page offers it


def test_the_page_shows_quality_and_proposals_and_adds_and_removes(
        team, django_capture_on_commit_callbacks):
    page = reverse("guard_model", kwargs={"slug": team.workspace.slug})
    with django_capture_on_commit_callbacks(execute=True):
        learning.request_model(team.workspace, team.author)
    text = client_for(team.auditor).get(page).content.decode()
    assert "How good its alarms are" in text and 'id="alarm-quality"' in text
    assert "(precision)" in text and "(recall)" in text
    assert "<code>data.to_cut &gt; 0</code>" in text
    assert "After take knife, where data.to_cut is above 0:" in text
    assert "confirmed on the held-out half" in text
    assert "Add<span" not in text   # auditors do not choose predicates
    author = client_for(team.author)
    text = author.get(page).content.decode()
    assert text.count("to the model</button>") >= 1
    add = reverse("guard_predicate_add", kwargs={"slug": team.workspace.slug})
    remove = reverse("guard_predicate_remove", kwargs={"slug": team.workspace.slug})
    assert client_for(team.auditor).post(add, {"rule_set": team.ruleset.pk,
                                               "predicate": json.dumps(TO_CUT)}).status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(team.author)
    assert strict.post(add, {"rule_set": team.ruleset.pk,
                             "predicate": json.dumps(TO_CUT)}).status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        done = author.post(add, {"rule_set": team.ruleset.pk, "predicate": json.dumps(TO_CUT)},
                           follow=True)
    text = done.content.decode()
    assert "Added to the model of kitchen; the model is learned again." in text
    assert ModelPredicates.objects.get().predicates == [TO_CUT]
    newest = LearnedRiskModel.objects.order_by("-id").first()
    assert newest.status == ModelStatus.READY and newest.predicates == [TO_CUT]
    assert "data.to_cut is above 0" in text and "Remove<span" in text
    bad = author.post(add, {"rule_set": team.ruleset.pk, "predicate": "{not json"}, follow=True)
    assert "predicate: the predicate is not JSON" in bad.content.decode()
    bad = author.post(add, {"rule_set": team.ruleset.pk,
                            "predicate": '{"kind": "label"}'}, follow=True)
    assert "predicate.atom: must be a non-empty text" in bad.content.decode()
    assert author.post(add, {"rule_set": "x", "predicate": "{}"}, follow=True).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        gone = author.post(remove, {"rule_set": team.ruleset.pk, "name": "data.to_cut > 0"},
                           follow=True)
    assert "Removed data.to_cut &gt; 0 from the model of kitchen" in gone.content.decode()
    assert ModelPredicates.objects.get().predicates == []
    assert AuditLogEntry.objects.filter(action="guard_predicates.set").count() == 2
    assert client_for(team.outsider).post(remove, {"rule_set": team.ruleset.pk,
                                                   "name": "x"}).status_code == 404
