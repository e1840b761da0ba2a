"""The guard's policy (every field checked, the field named) and its decisions."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from studio.risk.guard import (ALLOW, ASK_HUMAN, BEST_ACCEPTED, BEST_OF_N, DTMC, EXACT, INJECT,
                               INTERVENTIONS, RESAMPLE, SAMPLING, STOP, SWITCH, Assessment,
                               Policy, PolicyError, combine, decide)

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


# ---------------------------------------------------------------------------------------------
# The defaults (issue 27, item 1): never stricter than the exact check on a guess


def test_the_defaults_read_the_guarded_risk_fall_back_to_the_best_accepted_candidate():
    policy = Policy()
    assert policy.guarded_risk is True and policy.act_on_unbacked is False
    assert policy.fallback == BEST_ACCEPTED
    assert Policy.from_json({}) == policy


def test_a_stored_policy_keeps_what_it_states_and_takes_todays_defaults_for_the_rest():
    old = {"threshold": 0.5, "horizon": 5, "interventions": {}, "default_intervention": "resample",
           "max_resamples": 3, "fallback": "stop", "safer_model": "",
           "human_timeout_seconds": 300, "human_default": "stop", "guarded_risk": False}
    policy = Policy.from_json(old, RULES)
    assert policy.guarded_risk is False and policy.fallback == STOP
    assert policy.act_on_unbacked is False
    older = {k: v for k, v in old.items() if k != "guarded_risk"}
    assert Policy.from_json(older, RULES).guarded_risk is True


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_act_on_unbacked_is_true_or_false(value):
    with pytest.raises(PolicyError) as caught:
        Policy.from_json({"act_on_unbacked": value}, RULES)
    assert caught.value.field == "act_on_unbacked"


def test_an_unbacked_estimate_is_reported_not_acted_on():
    decision = decide(Policy(threshold=0.3),
                      assessment(learned={"approval": 0.4, "no_early_pay": 0.0}, backed=False))
    assert decision.decision == ALLOW
    assert decision.risk["approval"] == 0.4 and not decision.backed
    assert decision.predictor == DTMC
    assert decision.unbacked == [{"rule": "approval", "risk": 0.4}]
    assert "estimated approval 40% but has not seen enough of this situation to act on it" \
        in decision.reason
    opted_in = decide(Policy(threshold=0.3, act_on_unbacked=True),
                      assessment(learned={"approval": 0.4, "no_early_pay": 0.0}, backed=False))
    assert opted_in.decision == RESAMPLE and opted_in.unbacked == []
    backed = decide(Policy(threshold=0.3),
                    assessment(learned={"approval": 0.4, "no_early_pay": 0.0}, backed=True))
    assert backed.decision == RESAMPLE and backed.backed


def test_samples_act_even_when_the_model_is_unbacked():
    decision = decide(Policy(threshold=0.5),
                      assessment(sampled={"approval": 0.6, "no_early_pay": 0.0},
                                 learned={"approval": 0.9, "no_early_pay": 0.0}, backed=False))
    assert decision.decision == RESAMPLE and decision.predictor == SAMPLING
    assert decision.at_risk[0]["risk"] == 0.6
    assert decision.risk["approval"] == 0.9   # reported: the cautious reading


def test_the_fallback_takes_the_least_risky_accepted_candidate():
    policy = Policy(threshold=0.3, max_resamples=1)
    risky = assessment(learned={"approval": 0.8, "no_early_pay": 0.0})
    others = [assessment(now=["approval"]),
              assessment(learned={"approval": 0.5, "no_early_pay": 0.0}),
              assessment(learned={"approval": 0.35, "no_early_pay": 0.1})]
    assert decide(policy, risky, others, attempt=0).decision == RESAMPLE
    last = decide(policy, risky, others, attempt=1)
    assert last.decision == BEST_OF_N and last.candidate == 2
    assert "candidate 2 breaks no rule now and has the lowest risk" in last.reason
    # The proposed step is the least risky one: it goes ahead.
    alone = decide(policy, risky, others[:1], attempt=1)
    assert alone.decision == ALLOW and "this step breaks no rule now" in alone.reason


def test_the_fallback_stops_only_when_every_candidate_violates_now():
    policy = Policy(threshold=0.3, max_resamples=2)
    bad = assessment(now=["approval"])
    assert decide(policy, bad, [bad], attempt=1).decision == RESAMPLE
    last = decide(policy, bad, [bad, assessment(now=["no_early_pay"])], attempt=2)
    assert last.decision == STOP and "none of the 3 candidate(s)" in last.reason
    rescued = decide(policy, bad, [bad, assessment()], attempt=2)
    assert rescued.decision == BEST_OF_N and rescued.candidate == 1


def test_combine_keeps_the_strictest_fallback_and_acts_on_unbacked_when_any_set_does():
    lenient = Policy(fallback=ALLOW)
    default = Policy()
    careful = Policy(fallback=ASK_HUMAN, act_on_unbacked=True, guarded_risk=False)
    assert combine([(lenient, ["a"]), (default, ["b"])]).fallback == BEST_ACCEPTED
    both = combine([(default, ["a"]), (careful, ["b"])])
    assert both.fallback == ASK_HUMAN and both.act_on_unbacked and not both.guarded_risk
    assert not combine([(default, ["a"]), (lenient, ["b"])]).act_on_unbacked
    assert combine([(default, ["a"]), (default, ["b"])]).guarded_risk


# Property tests against an oracle written from the words.

def assessments(rules=RULES):
    risk = st.one_of(st.none(), st.floats(0, 1))
    return st.builds(
        lambda now, sampled, learned, backed: Assessment(
            {r: r in now for r in rules}, sampled, learned, backed),
        st.sets(st.sampled_from(rules)),
        st.one_of(st.none(), st.fixed_dictionaries({r: st.floats(0, 1) for r in rules})),
        st.one_of(st.none(), st.fixed_dictionaries({r: risk for r in rules})),
        st.booleans())


def actionable(a: Assessment, rule: str) -> list[float]:
    """The numbers a default policy may act on for ``rule``: samples, and backed estimates."""
    found = []
    if a.sampled is not None and a.sampled.get(rule) is not None:
        found.append(a.sampled[rule])
    if a.learned_backed and a.learned is not None and a.learned.get(rule) is not None:
        found.append(a.learned[rule])
    return found


@given(threshold=st.floats(0.01, 1), proposed=assessments(), others=st.lists(assessments(),
       max_size=4), attempt=st.integers(0, 6), resamples=st.integers(0, 5))
def test_default_policy_never_worse_than_the_exact_check(threshold, proposed, others, attempt,
                                                        resamples):
    policy = Policy(threshold=threshold, max_resamples=resamples)
    decision = decide(policy, proposed, others, attempt)
    accepted = not any(proposed.violates_now.values())
    over = any(v >= threshold for r in RULES for v in actionable(proposed, r))
    # Accepted by the exact check and no sample or backed estimate at the threshold: allowed.
    if accepted and not over:
        assert decision.decision == ALLOW
    # A stop only for a step that violates now.
    if decision.decision == STOP:
        assert not accepted
    # Nothing the exact check rejects goes ahead.
    if decision.decision == ALLOW:
        assert accepted
    if decision.decision == BEST_OF_N:
        assert not any(others[decision.candidate].violates_now.values())
    # Only resample, or after the limit allow / best_of_n / stop.
    assert decision.decision in (ALLOW, RESAMPLE, BEST_OF_N, STOP)
    if decision.decision == RESAMPLE:
        assert attempt < resamples


def acted(a: Assessment, act: bool, leave_out: set = frozenset()) -> float:
    """The worst risk a decision may act on (unknown counts as 0), the rules ``leave_out``
    aside; ``act``: the policy's act_on_unbacked."""
    worst = 0.0
    for rule in RULES:
        if rule in leave_out:
            continue
        if a.violates_now[rule]:
            return 1.0
        if a.sampled is not None:
            worst = max(worst, a.sampled[rule])
        if a.learned is not None and a.learned[rule] is not None and (
                act or a.learned_backed):
            worst = max(worst, a.learned[rule])
    return worst


@given(proposed=assessments(), others=st.lists(assessments(), max_size=4),
       threshold=st.floats(0.01, 1), act=st.booleans())
def test_the_fallback_picks_an_accepted_candidate_of_least_risk(proposed, others, threshold, act):
    policy = Policy(threshold=threshold, max_resamples=0, act_on_unbacked=act)
    decision = decide(policy, proposed, others)
    pool = [proposed, *others]

    if not decision.at_risk:
        assert decision.decision == ALLOW
        return
    accepted = [a for a in pool if not any(a.violates_now.values())]
    if not accepted:
        assert decision.decision == STOP
        return
    chosen = proposed if decision.decision == ALLOW else others[decision.candidate]
    assert decision.decision in (ALLOW, BEST_OF_N)
    assert not any(chosen.violates_now.values())
    assert acted(chosen, act) == min(acted(a, act) for a in accepted)


# When stopping keeps nothing: every candidate breaks a rule that ending the session breaks too.

def test_the_fallback_lets_a_step_go_when_stopping_would_break_the_rule_too():
    policy = Policy(threshold=0.3, max_resamples=1)
    late = assessment(now=["approval"])   # an obligation whose time ran out: every step breaks it
    assert decide(policy, late, [late], attempt=0, ended_violates={"approval"}).decision \
        == RESAMPLE
    going = decide(policy, late, [late], attempt=1, ended_violates={"approval"})
    assert going.decision == ALLOW
    assert "ending the session here would break it too" in going.reason
    assert "the violation is recorded" in going.reason
    # Ending the session would keep the rule: stopping still helps, so it stops.
    assert decide(policy, late, [late], attempt=1).decision == STOP
    # The proposed step also breaks a rule that stopping keeps: the other candidate goes.
    worse = assessment(now=["approval", "no_early_pay"])
    other = decide(policy, worse, [late], attempt=1, ended_violates={"approval"})
    assert other.decision == BEST_OF_N and other.candidate == 0
    # One candidate keeps the late rule (it breaks another one): the late rule is not broken
    # by every candidate, so nothing is excused and the session stops.
    mixed = decide(policy, late, [assessment(now=["no_early_pay"])], attempt=1,
                   ended_violates={"approval"})
    assert mixed.decision == STOP
    # A policy whose fallback is stop still stops.
    strict = Policy(threshold=0.3, max_resamples=1, fallback=STOP)
    assert decide(strict, late, [late], attempt=1, ended_violates={"approval"}).decision == STOP


@given(proposed=assessments(), others=st.lists(assessments(), max_size=4),
       threshold=st.floats(0.01, 1), act=st.booleans(),
       ended=st.sets(st.sampled_from(RULES)))
def test_the_fallback_excuses_only_rules_stopping_would_break(proposed, others, threshold, act,
                                                               ended):
    policy = Policy(threshold=threshold, max_resamples=0, act_on_unbacked=act)
    decision = decide(policy, proposed, others, ended_violates=ended)
    pool = [proposed, *others]

    def broken(a: Assessment) -> set:
        return {rule for rule in RULES if a.violates_now[rule]}

    if not decision.at_risk:
        assert decision.decision == ALLOW and not broken(proposed)
        return
    if any(not broken(a) for a in pool):
        return   # the accepted case: the property test above
    excused = set(ended)
    for a in pool:
        excused &= broken(a)
    going = [a for a in pool if excused and broken(a) <= excused]
    if not going:
        assert decision.decision == STOP
        return
    assert decision.decision in (ALLOW, BEST_OF_N)
    chosen = proposed if decision.decision == ALLOW else others[decision.candidate]
    assert broken(chosen) <= excused
    assert acted(chosen, act, excused) == min(acted(a, act, excused) for a in going)
