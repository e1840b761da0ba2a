"""The guard over real HTTP: decisions for proposed steps, the predictors, idempotency, a person
in the loop, policies, and refusals that name the field."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from studio.guard import services as guard_services
from studio.rules.models import RuleSet
from studio.traces.models import TraceSession
from studio.workspaces import services as workspace_services
from studio.workspaces.models import AuditLogEntry, Role
from tests.live.conftest import RULES, Agent, approve, owner, workspace  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

PAY = {"output": {"tool": "pay", "args": {"amount": 10}}}
SHIP = {"output": {"tool": "ship", "args": {}}}
DELETE = {"output": {"tool": "delete", "args": {}}}
LOOK = {"output": {"tool": "look", "args": {}}}


@pytest.fixture
def agent(workspace, owner):
    _, secret = workspace_services.create_token(workspace, "agent", ["auditor"], by=owner)
    return Agent(workspace.slug, token=secret)


@pytest.fixture
def ruleset(workspace):
    rules = RuleSet.objects.create(workspace=workspace, name="shop", live=True)
    rules.rules.set(workspace.rules.all())
    return rules


@pytest.fixture
def staff(owner):
    client = Client()
    client.force_login(owner)
    return client


def ask(agent, session, body, *, raw=None):
    data = raw if raw is not None else json.dumps(body).encode()
    return agent.client.post(agent.url(session, "guard"), data=data,
                             content_type="application/json",
                             headers={"Authorization": f"Bearer {agent.token}"})


def poll(agent, session, decision_id, wait=0):
    return agent.client.get(agent.url(session, f"guard/{decision_id}") + f"?wait={wait}",
                            headers={"Authorization": f"Bearer {agent.token}"})


def set_policy(staff, workspace, ruleset, policy):
    return staff.put(f"/api/w/{workspace.slug}/rule-sets/{ruleset.pk}/guard-policy",
                     data=json.dumps({"policy": policy}), content_type="application/json")


def test_a_safe_step_is_allowed_and_nothing_is_stored(agent, workspace):
    answer = ask(agent, "s1", {"event": PAY})
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["decision"] == "allow" and body["status"] == "decided"
    assert body["predictor"] == "exact" and body["backed"] is True
    assert body["max_resamples"] == 3 and body["learned_model"] is False
    assert set(body["risk"]) == {name for name, _ in RULES}
    assert not TraceSession.objects.filter(workspace=workspace, external_id="s1").exists()


def test_a_step_that_would_violate_is_resampled_with_the_rule_named(agent):
    agent.post("s1", [LOOK])
    body = ask(agent, "s1", {"event": SHIP}).json()
    assert body["decision"] == "resample"
    assert body["risk"]["pay_before_ship"] == 1.0
    assert [r["rule"] for r in body["rules_at_risk"]] == ["pay_before_ship"]
    assert "would violate pay_before_ship" in body["reason"]
    # Asking changed nothing: the session still has one step, and the step is still allowed
    # after the payment the agent actually makes.
    assert TraceSession.objects.get(external_id="s1").steps == 1
    agent.post("s1", [PAY])
    assert ask(agent, "s1", {"event": SHIP}).json()["decision"] == "allow"


def test_sampled_continuations_give_the_share_that_violates_within_the_horizon(
        agent, staff, workspace, ruleset):
    assert set_policy(staff, workspace, ruleset, {"threshold": 0.5, "horizon": 3}).status_code \
        == 200
    body = ask(agent, "s2", {"event": LOOK, "continuation": [LOOK, DELETE],
                             "candidates": [{"event": LOOK, "continuation": [PAY, SHIP]},
                                            {"event": PAY, "continuation": [LOOK, LOOK, DELETE]},
                                            {"event": LOOK}]}).json()
    # Samples: (look, look, delete) violates no_delete at its third step; (look, pay, ship)
    # nothing; (pay, look, look | delete) delete is beyond the horizon of 3; (look) nothing.
    assert body["risk"]["no_delete"] == 0.25
    assert body["decision"] == "allow"
    assert body["predictor"] == "sampling"
    risky = ask(agent, "s2", {"event": LOOK, "continuation": [DELETE],
                              "candidates": [{"event": DELETE}]}).json()
    assert risky["risk"]["no_delete"] == 1.0 and risky["decision"] == "resample"


def test_best_of_n_names_a_safe_candidate(agent, staff, workspace, ruleset):
    set_policy(staff, workspace, ruleset, {"default_intervention": "best_of_n"})
    body = ask(agent, "s3", {"event": SHIP, "candidates": [{"event": DELETE},
                                                           {"event": PAY}]}).json()
    assert body["decision"] == "best_of_n" and body["candidate"] == 1


def test_inject_says_what_the_rules_at_risk_still_require(agent, staff, workspace, ruleset):
    set_policy(staff, workspace, ruleset, {"interventions": {"pay_before_ship": "inject"}})
    body = ask(agent, "s4", {"event": SHIP}).json()
    assert body["decision"] == "inject"
    assert body["inject"].startswith("Before your next step, keep these rules:")
    assert "pay_before_ship: still owed:" in body["inject"]
    assert "call to pay" in body["inject"] and "tool_call:" not in body["inject"]


def test_after_the_most_resamples_the_default_takes_the_best_accepted_candidate(
        agent, staff, workspace, ruleset):
    agent.post("s6", [LOOK])
    assert ask(agent, "s6", {"event": SHIP, "attempt": 2}).json()["decision"] == "resample"
    body = ask(agent, "s6", {"event": SHIP, "attempt": 3,
                             "candidates": [{"event": DELETE}, {"event": LOOK}]}).json()
    assert body["decision"] == "best_of_n" and body["candidate"] == 1
    assert "candidate 1 breaks no rule now and is the only candidate that does" in body["reason"]
    # None of them keeps the rules now: refused, and only then a stop.
    none = ask(agent, "s6", {"event": SHIP, "attempt": 3,
                             "candidates": [{"event": DELETE}]}).json()
    assert none["decision"] == "stop" and "none of the 2 candidate(s)" in none["reason"]


def test_when_stopping_would_break_the_rule_too_the_default_lets_the_step_go(
        agent, workspace, owner):
    # An obligation with a deadline: notify in the step right after a refund.
    approve(workspace, owner, "notify_after_refund",
            "G(tool_call:refund -> F[1,1] tool_call:notify)")
    rules = RuleSet.objects.create(workspace=workspace, name="refunds", live=True)
    rules.rules.set(workspace.rules.all())
    refund = {"output": {"tool": "refund", "args": {}}}
    agent.post("s9", [PAY, refund])
    first = ask(agent, "s9", {"event": LOOK, "attempt": 0}).json()
    assert first["decision"] == "resample" and "notify_after_refund" in first["reason"]
    # Every candidate misses the deadline, and ending the session would miss it too: stopping
    # keeps nothing, so the step goes ahead and says why.
    late = ask(agent, "s9", {"event": LOOK, "attempt": 3,
                             "candidates": [{"event": SHIP}]}).json()
    assert late["decision"] == "allow", late
    assert "ending the session here would break it too" in late["reason"]
    # A candidate that also breaks a rule stopping would keep is not the one taken.
    other = ask(agent, "s9", {"event": DELETE, "attempt": 3,
                              "candidates": [{"event": LOOK}]}).json()
    assert other["decision"] == "best_of_n" and other["candidate"] == 0
    # Where ending the session keeps the rule (a ban), the default still stops.
    ban = ask(agent, "s9b", {"event": DELETE, "attempt": 3,
                             "candidates": [{"event": DELETE}]}).json()
    assert ban["decision"] == "stop"


def test_after_the_most_resamples_the_policy_falls_back(agent, staff, workspace, ruleset):
    set_policy(staff, workspace, ruleset, {"max_resamples": 1, "fallback": "switch",
                                           "safer_model": "careful-1"})
    assert ask(agent, "s5", {"event": SHIP, "attempt": 0}).json()["decision"] == "resample"
    body = ask(agent, "s5", {"event": SHIP, "attempt": 1}).json()
    assert body["decision"] == "switch" and body["model"] == "careful-1"


def test_the_same_decision_id_answers_the_same_and_another_request_under_it_is_409(agent):
    first = ask(agent, "s6", {"event": SHIP, "decision_id": "d-1"}).json()
    again = ask(agent, "s6", {"event": SHIP, "decision_id": "d-1"}).json()
    assert again["decision"] == first["decision"] and again["repeated"] is True
    assert again["decision_id"] == "d-1"
    other = ask(agent, "s6", {"event": PAY, "decision_id": "d-1"})
    assert other.status_code == 409 and other.json()["field"] == "decision_id"


def test_ask_human_waits_for_a_reviewer_and_everything_is_in_the_audit_log(
        agent, staff, workspace, ruleset):
    set_policy(staff, workspace, ruleset, {"interventions": {"no_delete": "ask_human"}})
    body = ask(agent, "s7", {"event": DELETE, "decision_id": "ask-1"}).json()
    assert body["decision"] == "ask_human" and body["status"] == "pending"
    assert body["poll"] == "/api/w/acme/live/sessions/s7/guard/ask-1"
    assert poll(agent, "s7", "ask-1").json()["status"] == "pending"
    pending = staff.get(f"/api/w/{workspace.slug}/guard/decisions").json()
    assert [(p["session"], p["tool"]) for p in pending] == [("s7", "delete")]
    answered = staff.post(f"/api/w/{workspace.slug}/guard/decisions/{pending[0]['id']}/approve",
                          data=json.dumps({"note": "a test record, fine"}),
                          content_type="application/json")
    assert answered.status_code == 200 and answered.json()["decision"] == "allow"
    final = poll(agent, "s7", "ask-1", wait=5).json()
    assert (final["status"], final["decision"], final["decided_by"]) == (
        "approved", "allow", "owner")
    again = staff.post(f"/api/w/{workspace.slug}/guard/decisions/{pending[0]['id']}/deny",
                       data="{}", content_type="application/json")
    assert again.status_code == 409
    actions = list(AuditLogEntry.objects.filter(workspace=workspace)
                   .values_list("action", flat=True))
    assert {"guard_policy.set", "guard.asked_human", "guard.approved"} <= set(actions)


def test_nobody_answering_in_time_applies_the_policys_default(agent, staff, workspace,
                                                              ruleset):
    set_policy(staff, workspace, ruleset, {"default_intervention": "ask_human",
                                           "human_timeout_seconds": 1})
    ask(agent, "s8", {"event": DELETE, "decision_id": "late"})
    final = poll(agent, "s8", "late", wait=3).json()
    assert (final["status"], final["decision"]) == ("timed_out", "stop")
    assert AuditLogEntry.objects.filter(action="guard.timed_out").count() == 1


def test_only_reviewers_answer(agent, staff, workspace, ruleset, django_user_model):
    set_policy(staff, workspace, ruleset, {"default_intervention": "ask_human"})
    ask(agent, "s9", {"event": DELETE})
    pk = guard_services.pending_decisions(workspace)[0].pk
    author = django_user_model.objects.create_user(username="writer", password="pw-writer-123")
    workspace_services.add_member(workspace, author, Role.AUTHOR)
    client = Client()
    client.force_login(author)
    refused = client.post(f"/api/w/{workspace.slug}/guard/decisions/{pk}/approve", data="{}",
                          content_type="application/json")
    assert refused.status_code == 403
    assert guard_services.pending_decisions(workspace)[0].pk == pk


@pytest.mark.parametrize("body, field", [
    ({}, "event"),
    ({"event": "ship"}, "event"),
    ({"event": SHIP, "candidates": [{"event": PAY}, {"continuation": []}]}, "candidates[1]"),
    ({"event": SHIP, "candidates": {"event": PAY}}, "candidates"),
    ({"event": SHIP, "continuation": "later"}, "continuation"),
    ({"event": SHIP, "attempt": -1}, "attempt"),
    ({"event": SHIP, "decision_id": ""}, "decision_id"),
    ({"event": SHIP, "decison_id": "x"}, "decison_id"),
    ({"event": {"output": {"tool": "ship"}, "timestamp": "yesterday"}}, "event.timestamp"),
])
def test_a_request_that_does_not_fit_is_refused_with_the_field_named(agent, body, field):
    answer = ask(agent, "bad", body)
    assert answer.status_code == 422, answer.content
    assert answer.json()["field"] == field


@pytest.mark.parametrize("policy, field", [
    ({"threshold": 2}, "threshold"),
    ({"horizon": 1000}, "horizon"),
    ({"interventions": {"no_such_rule": "stop"}}, "interventions.no_such_rule"),
    ({"default_intervention": "pray"}, "default_intervention"),
])
def test_a_policy_that_does_not_fit_is_refused_with_the_field_named(staff, workspace, ruleset,
                                                                    policy, field):
    answer = set_policy(staff, workspace, ruleset, policy)
    assert answer.status_code == 422 and answer.json()["field"] == field


def test_an_ended_session_takes_no_guard_question(agent):
    agent.post("done", [PAY])
    agent.client.post(agent.url("done", "end"), data="", content_type="application/json",
                      headers={"Authorization": f"Bearer {agent.token}"})
    assert ask(agent, "done", {"event": SHIP}).status_code == 409


def test_a_guard_question_without_credentials_is_401(agent):
    answer = agent.client.post(agent.url("s1", "guard"), data=json.dumps({"event": PAY}),
                               content_type="application/json")
    assert answer.status_code == 401


def test_the_live_page_shows_a_question_in_words_and_a_reviewer_answers_it(
        agent, staff, workspace, ruleset):
    set_policy(staff, workspace, ruleset, {"interventions": {"no_delete": "ask_human"}})
    ask(agent, "s10", {"event": {"output": {"tool": "delete", "args": {"what": "<b>db</b>"}}},
                       "decision_id": "q"})
    page = staff.get(f"/w/{workspace.slug}/live/").content.decode()
    assert "Waiting for a person (1)" in page
    assert "Session s10" in page and "wants to call delete with" in page
    assert "&lt;b&gt;db&lt;/b&gt;" in page and "<b>db</b>" not in page
    assert "This step would violate no_delete" in page
    assert "Still owed:" in page
    pk = guard_services.pending_decisions(workspace)[0].pk
    answered = staff.post(f"/w/{workspace.slug}/guard/decisions/{pk}/answer",
                          {"answer": "deny", "note": "not in production"},
                          headers={"HX-Request": "true"})
    assert answered.status_code == 200
    assert "Denied: the agent in session s10 stops." in answered.content.decode()
    assert poll(agent, "s10", "q").json()["status"] == "denied"
    again = staff.post(f"/w/{workspace.slug}/guard/decisions/{pk}/answer", {"answer": "approve"})
    assert again.status_code == 302


def test_the_learned_model_predicts_a_violation_before_the_step_that_makes_it(
        agent, staff, workspace, owner):
    """Sessions where opening the console is followed by a deletion 4 times in 5: the step
    that opens the console is not a violation, but the learned risk of one is
    about 0.8 within the default horizon of 5 - the guard intervenes before it, saying the
    DTMC decided."""
    import random

    from studio.guard import learning

    approve(workspace, owner, "console_logged", "G(tool_call:console -> F tool_call:log)")
    rng = random.Random(7)
    console = {"output": {"tool": "console", "args": {}}}
    log = {"output": {"tool": "log", "args": {}}}
    for s in range(60):
        events = [PAY, console] + ([DELETE] if rng.random() < 0.8 else [LOOK]) + [log]
        agent.post(f"learn-{s}", events)
        agent.client.post(agent.url(f"learn-{s}", "end"), data="",
                          content_type="application/json",
                          headers={"Authorization": f"Bearer {agent.token}"})
    made = learning.request_model(workspace, None, "test")
    assert learning.learn_model(made.pk) in ("ready", "gone")
    made.refresh_from_db()
    assert made.status == "ready", made.error
    learning.clear_caches()
    agent.post("live-1", [PAY])
    ruleset = RuleSet.objects.create(workspace=workspace, name="all", live=True)
    ruleset.rules.set(workspace.rules.all())
    # Read as paper 004 does (the agent as learned) and acting on every estimate: the guard
    # intervenes before the deletion, saying the DTMC decided.
    guard_services.set_policy(ruleset, {"guarded_risk": False, "act_on_unbacked": True}, owner)
    body = ask(agent, "live-1", {"event": console}).json()
    assert body["learned_model"] is True
    assert body["predictor"] == "dtmc"
    assert 0.6 < body["risk"]["no_delete"] < 0.95
    assert body["decision"] == "resample"
    assert body["backed"] is False     # 60 sessions are far fewer than the PAC bound asks
    # Proposing the harmless step instead: the learned risk stays low.
    calm = ask(agent, "live-1", {"event": LOOK}).json()
    assert calm["decision"] == "allow"
    # Not acting on unbacked estimates (the default): the same number is reported, with the
    # reason it was not acted on, and the step - which breaks no rule now - goes ahead.
    guard_services.set_policy(ruleset, {"guarded_risk": False}, owner)
    reported = ask(agent, "live-1", {"event": console}).json()
    assert reported["decision"] == "allow" and reported["backed"] is False
    assert reported["risk"]["no_delete"] == body["risk"]["no_delete"]
    assert {e["rule"] for e in reported["unbacked"]} == {e["rule"] for e in body["rules_at_risk"]}
    assert all(e["risk"] == reported["risk"][e["rule"]] for e in reported["unbacked"])
    assert "no_delete" in {e["rule"] for e in reported["unbacked"]}
    assert "has not seen enough of this situation to act on it" in reported["reason"]
    # Read as the risk of an agent behind this guard (the default: it refuses the deletion at
    # its own step), opening the console no longer risks no_delete (the refused mass goes to
    # the other steps, which end sessions without the end_turn the rule "ends" asks for).
    guard_services.set_policy(ruleset, {}, owner)
    behind = ask(agent, "live-1", {"event": console}).json()
    assert behind["risk"]["no_delete"] < 0.05, behind
    assert "no_delete" not in [r["rule"] for r in behind["rules_at_risk"]]


def test_a_session_whose_events_cannot_be_labelled_now_is_503_with_retry_after(
        agent, monkeypatch):
    """A labeler that asks a model and gets no answer: the guard cannot know the session's
    state, so it answers 503 with Retry-After - never a guess - and decides nothing."""
    from studio.guard.models import GuardDecision
    from studio.labeling import Labeling
    from studio.labeling.llm import LLMError

    agent.post("s11", [PAY])

    def unavailable(self, event, previous=None):
        raise LLMError("the model endpoint timed out")

    monkeypatch.setattr(Labeling, "label", unavailable)
    answer = ask(agent, "s11", {"event": SHIP})
    assert answer.status_code == 503 and int(answer["Retry-After"]) > 0
    assert "could not label" in answer.json()["detail"]
    assert not GuardDecision.objects.exists()
