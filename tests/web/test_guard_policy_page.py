"""A rule set's guard-policy page through real requests: the policy in words for members, the
form for authors and admins checked by the API's own service (its message beside the field, the
input kept), the save in the audit log, and the link from the rule set page."""

from __future__ import annotations

import pytest
from django.test import Client

from studio.guard import services as guard_services
from studio.rules import services as rules
from studio.workspaces.actions import LogAction
from studio.workspaces.models import AuditLogEntry
from tests.api.world import Api, world  # noqa: F401


@pytest.fixture
def ruleset(world):
    refund = rules.create_rule(world.acme, world.ann, "refund-cap", "G(!big_refund)")
    notify = rules.create_rule(world.acme, world.ann, "notify", "G(request -> F answer)")
    return rules.create_rule_set(world.acme, world.ann, "payments",
                                 rule_ids=[refund.id, notify.id])


def _url(ruleset) -> str:
    return f"/w/acme/rule-sets/{ruleset.id}/guard-policy/"


def _as(world, name: str) -> Client:
    client = Client()
    client.force_login(world.users[name])
    return client


def _form(**changes) -> dict:
    form = {"threshold": "0.3", "horizon": "8", "intervention_0": "", "intervention_1": "stop",
            "default_intervention": "inject", "max_resamples": "2", "fallback": "ask_human",
            "safer_model": "", "human_timeout_seconds": "600", "human_default": "allow"}
    form.update(changes)
    return {k: v for k, v in form.items() if v is not None}


def test_members_read_it_in_words_outsiders_get_404(world, ruleset):
    page = _as(world, "rob").get(_url(ruleset))  # a reviewer reads, but has no form
    html = page.content.decode()
    assert page.status_code == 200
    assert "within the next <strong>5 steps</strong>" in html and "50% or more" in html
    assert "refund-cap: ask the agent for another step (resample)" in html
    # The defaults: unbacked estimates reported, not acted on; the best accepted proposal.
    assert "shown in the decision but <strong>not acted on</strong>" in html
    assert "falls back to: take the least risky of the proposals that break no rule now" in html
    assert "for the agent behind this guard" in html
    assert 'id="backed-words"' in html and "PAC" in html
    assert "<form method=\"post\" class=\"narrow policy-form\"" not in html
    assert _as(world, "oscar").get(_url(ruleset)).status_code == 404
    assert _as(world, "ann").get("/w/acme/rule-sets/999999/guard-policy/").status_code == 404
    assert _as(world, "oscar").post(_url(ruleset), _form()).status_code == 404


def test_reviewers_and_auditors_may_not_change_it(world, ruleset):
    for name in ("rob", "aud"):
        assert _as(world, name).post(_url(ruleset), _form()).status_code == 403
    assert guard_services.policy_of(ruleset).threshold == 0.5
    assert not AuditLogEntry.objects.filter(action=LogAction.GUARD_POLICY_SET).exists()


def test_an_author_saves_it_and_the_log_records_it(world, ruleset):
    alice = _as(world, "alice")
    answer = alice.post(_url(ruleset), _form())
    assert answer.status_code == 302 and answer["Location"] == _url(ruleset)
    policy = guard_services.policy_of(ruleset)
    assert (policy.threshold, policy.horizon, policy.default_intervention) == (0.3, 8, "inject")
    assert dict(policy.interventions) == {"refund-cap": "stop"}   # rules sorted: notify first
    assert (policy.max_resamples, policy.fallback, policy.human_timeout_seconds,
            policy.human_default, policy.guarded_risk, policy.act_on_unbacked) == (
        2, "ask_human", 600, "allow", False, False)
    entry = AuditLogEntry.objects.get(action=LogAction.GUARD_POLICY_SET)
    assert entry.actor == world.alice and entry.details["ruleset"] == "payments"
    html = alice.get(_url(ruleset)).content.decode()
    assert "is saved" in html and "30% or more" in html and "<strong>8 steps</strong>" in html
    assert "refund-cap: stop the agent (stop)" in html
    assert '<option value="stop" selected>' in html


def test_the_services_error_is_shown_beside_its_field_with_the_input_kept(world, ruleset):
    ann = _as(world, "ann")
    cases = [("threshold", "1.5", "threshold must lie between 0 and 1, not 1.5"),
             ("threshold", "a lot", "threshold must be a number"),
             ("horizon", "0", "horizon must lie between 1 and 100, not 0"),
             ("horizon", "2.5", "horizon must be a whole number"),
             ("human_timeout_seconds", "", "human_timeout_seconds must be a whole number"),
             ("fallback", "explode", "fallback must be one of allow, best_accepted, switch, "
                                     "ask_human, stop, not &#x27;explode&#x27;")]
    for field, value, message in cases:
        answer = ann.post(_url(ruleset), _form(**{field: value}))
        html = answer.content.decode()
        assert answer.status_code == 422, field
        assert f'<span id="{field}-error" class="error" role="alert">{message}</span>' in html
        if field != "fallback":
            assert f'name="{field}" inputmode' in html and f'value="{value}"' in html
        assert 'value="0.3"' in html or field == "threshold"   # the other fields kept too
    # A switch with no safer model: the same sentence the API answers.
    html = ann.post(_url(ruleset), _form(intervention_0="switch")).content.decode()
    assert 'id="safer_model-error"' in html and "name the safer model" in html
    assert 'id="id_intervention_0"' in html and '<option value="switch" selected>' in html
    assert guard_services.policy_of(ruleset).threshold == 0.5
    assert not AuditLogEntry.objects.filter(action=LogAction.GUARD_POLICY_SET).exists()


def test_the_page_and_the_api_agree(world, ruleset):
    _as(world, "ann").post(_url(ruleset), _form(guarded_risk="on", safer_model="small-safe",
                                                 fallback="switch", act_on_unbacked="on"))
    answer = Api(user=world.ann).get(f"w/acme/rule-sets/{ruleset.id}/guard-policy").json()
    assert answer["policy"]["guarded_risk"] is True
    assert answer["policy"]["act_on_unbacked"] is True
    html = _as(world, "ann").get(_url(ruleset)).content.decode()
    assert "is <strong>acted on</strong> like any other" in html
    assert '<input type="checkbox" name="act_on_unbacked" checked>' in html
    assert answer["policy"]["fallback"] == "switch"
    assert answer["policy"]["safer_model"] == "small-safe"


def test_the_rule_set_page_links_it(world, ruleset):
    html = _as(world, "rob").get(f"/w/acme/rule-sets/{ruleset.id}/").content.decode()
    assert f'href="{_url(ruleset)}"' in html
