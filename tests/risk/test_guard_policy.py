"""The guard's policy (every field checked, the field named) and its decisions."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from studio.risk.guard import (ALLOW, ASK_HUMAN, BEST_OF_N, DTMC, EXACT, INJECT, INTERVENTIONS,
                               RESAMPLE, SAMPLING, STOP, SWITCH, Assessment, Policy, PolicyError,
                               decide)

RULES = ["no_early_pay", "approval"]


@pytest.mark.parametrize("data, field", [
    ({"threshold": 1.5}, "threshold"),
    ({"threshold": -0.1}, "threshold"),
    ({"threshold": "high"}, "threshold"),
    ({"threshold": True}, "threshold"),
    ({"horizon": 0}, "horizon"),
    ({"horizon": 10_000}, "horizon"),
    ({"horizon": 2.5}, "horizon"),
    ({"interventions": {"nope": "stop"}}, "interventions.nope"),
    ({"interventions": {"approval": "explode"}}, "interventions.approval"),
    ({"interventions": ["stop"]}, "interventions"),
    ({"default_intervention": "allow"}, "default_intervention"),
    ({"max_resamples": -1}, "max_resamples"),
    ({"fallback": "resample"}, "fallback"),
    ({"default_intervention": "switch"}, "safer_model"),
    ({"human_default": "maybe"}, "human_default"),
    ({"human_timeout_seconds": 0}, "human_timeout_seconds"),
    ({"thresold": 0.2}, "thresold"),
    ({"guarded_risk": "yes"}, "guarded_risk"),
    (["not", "an", "object"], "policy"),
])
def test_a_policy_that_does_not_fit_is_refused_with_the_field_named(data, field):
    with pytest.raises(PolicyError) as caught:
        Policy.from_json(data, RULES)
    assert caught.value.field == field


def test_a_policy_round_trips_through_json():
    policy = Policy.from_json({"threshold": 0.3, "horizon": 7,
                               "interventions": {"approval": "ask_human"},
                               "default_intervention": "inject", "max_resamples": 2,
                               "fallback": "switch", "safer_model": "careful-1",
                               "guarded_risk": True}, RULES)
    assert Policy.from_json(policy.to_json(), RULES) == policy
    assert policy.intervention_for("approval") == ASK_HUMAN
    assert policy.intervention_for("no_early_pay") == INJECT


def assessment(now=(), sampled=None, learned=None, backed=True):
    return Assessment({r: r in now for r in RULES}, sampled, learned, backed)


def test_a_step_that_violates_now_is_never_allowed_whatever_the_other_predictors_say():
    policy = Policy(threshold=0.9)
    decision = decide(policy, assessment(now=["approval"], learned={"approval": 0.0,
                                                                    "no_early_pay": 0.0}))
    assert decision.decision == RESAMPLE
    assert decision.predictor == EXACT
    assert decision.risk["approval"] == 1.0
    assert "would violate approval" in decision.reason


def test_below_the_threshold_is_allowed_and_says_the_highest_risk():
    decision = decide(Policy(threshold=0.5),
                      assessment(learned={"approval": 0.2, "no_early_pay": 0.1}))
    assert decision.decision == ALLOW
    assert decision.predictor == DTMC
    assert "20%" in decision.reason


def test_the_cautious_reading_takes_the_larger_of_sampled_and_learned():
    decision = decide(Policy(threshold=0.5),
                      assessment(sampled={"approval": 0.6, "no_early_pay": 0.0},
                                 learned={"approval": 0.1, "no_early_pay": 0.0}, backed=False))
    assert decision.decision == RESAMPLE
    assert decision.predictor == SAMPLING
    assert decision.backed   # sampled numbers need no PAC bound
    assert decision.risk == {"approval": 0.6, "no_early_pay": 0.0}


def test_an_unbacked_learned_risk_says_so():
    decision = decide(Policy(threshold=0.3),
                      assessment(learned={"approval": 0.4, "no_early_pay": 0.0}, backed=False))
    assert decision.predictor == DTMC and not decision.backed


def test_a_risk_nobody_could_estimate_is_not_called_safe():
    decision = decide(Policy(threshold=0.3),
                      assessment(learned={"approval": None, "no_early_pay": None}))
    assert decision.decision == ALLOW
    assert decision.risk == {"approval": None, "no_early_pay": None}
    assert "not estimated for no_early_pay, approval" in decision.reason


def test_the_strictest_intervention_of_the_rules_at_risk_wins():
    policy = Policy(threshold=0.2, interventions={"approval": ASK_HUMAN,
                                                  "no_early_pay": INJECT})
    decision = decide(policy, assessment(learned={"approval": 0.5, "no_early_pay": 0.9}))
    assert decision.decision == ASK_HUMAN
    assert {e["rule"] for e in decision.at_risk} == set(RULES)


def test_inject_carries_what_the_rules_at_risk_still_require():
    policy = Policy(threshold=0.2, default_intervention=INJECT)
    decision = decide(policy, assessment(now=["approval"]),
                      requires={"approval": "a manager approves before any payment"})
    assert decision.decision == INJECT
    assert "approval: a manager approves before any payment" in decision.inject


def test_after_the_most_resamples_the_fallback_is_used():
    policy = Policy(threshold=0.2, max_resamples=2, fallback=STOP)
    risky = assessment(now=["approval"])
    assert decide(policy, risky, attempt=1).decision == RESAMPLE
    last = decide(policy, risky, attempt=2)
    assert last.decision == STOP and "limit" in last.reason
    lenient = Policy(threshold=0.2, max_resamples=0, fallback=ALLOW)
    assert decide(lenient, risky).decision == ALLOW


def test_best_of_n_names_the_safest_other_candidate_or_resamples():
    policy = Policy(threshold=0.3, default_intervention=BEST_OF_N)
    risky = assessment(now=["no_early_pay"])
    others = [assessment(now=["approval"]),
              assessment(learned={"approval": 0.25, "no_early_pay": 0.0}),
              assessment(learned={"approval": 0.05, "no_early_pay": 0.1})]
    decision = decide(policy, risky, others)
    assert decision.decision == BEST_OF_N and decision.candidate == 2
    assert decide(policy, risky, others[:1]).decision == RESAMPLE


def test_switch_names_the_safer_model():
    policy = Policy.from_json({"threshold": 0.1, "default_intervention": "switch",
                               "safer_model": "careful-1"}, RULES)
    decision = decide(policy, assessment(now=["approval"]))
    assert decision.decision == SWITCH and decision.model == "careful-1"


risk_values = st.one_of(st.none(), st.floats(0, 1))


@given(threshold=st.floats(0, 1), learned=st.fixed_dictionaries({r: risk_values for r in RULES}),
       now=st.sets(st.sampled_from(RULES)), choice=st.sampled_from(INTERVENTIONS))
def test_allowed_exactly_when_no_known_risk_reaches_the_threshold(threshold, learned, now,
                                                                   choice):
    policy = Policy(threshold=threshold, default_intervention=choice,
                    safer_model="m", max_resamples=5)
    decision = decide(policy, assessment(now=now, learned=learned))
    effective = {r: 1.0 if r in now else learned[r] for r in RULES}
    at_risk = {r for r, v in effective.items()
               if v is not None and v >= threshold and not (threshold == 0 and v == 0)}
    assert {e["rule"] for e in decision.at_risk} == at_risk
    assert (decision.decision == ALLOW) == (not at_risk)
    if at_risk and choice != BEST_OF_N:
        assert decision.decision == choice
