"""The sampling predictor (TRAC_P+I) against a direct reading of the rules on each sample."""

from hypothesis import given, settings
from hypothesis import strategies as st

from studio.monitor import FastSessionMonitor, RuleSet, SessionMonitor
from studio.risk.sampling import sample_risk

RULESET = RuleSet([("no_pay_before_check", "!pay W check"), ("never_leak", "G !leak")])
ATOMS = ["pay", "check", "leak", "other"]

events = st.lists(st.sampled_from(ATOMS).map(lambda a: {"labels": [a]}), max_size=6)


def violates_directly(history, sample, rule):
    """The rule read on the whole trace (history + sample), by hand: is it violated at some
    step of the sample (and not already before it)?"""
    trace = [e["labels"][0] for e in history + sample]
    start = len(history)
    if rule == "never_leak":
        return "leak" in trace[start:]
    # !pay W check: violated at the first pay that comes before any check (first verdict).
    for i, atom in enumerate(trace):
        if atom == "check":
            return False
        if atom == "pay":
            return i >= start
    return False


@settings(max_examples=150, deadline=None)
@given(history=events, samples=st.lists(events.filter(bool), min_size=1, max_size=5),
       horizon=st.integers(1, 6), fast=st.booleans())
def test_the_risk_is_the_share_of_samples_that_violate_within_the_horizon(
        history, samples, horizon, fast):
    cls = FastSessionMonitor if fast else SessionMonitor
    monitor = cls(RULESET, witnesses=False)
    for event in history:
        monitor.feed(event)
    state = monitor.to_json() if history else None
    answer = sample_risk(RULESET, state, samples, horizon, monitor_class=cls)
    # TRAC_R keeps counting after a violation; the direct reading covers the first verdict,
    # so compare only where the history itself is clean.
    clean = not any(violates_directly([], history, r) for r in ("never_leak",
                                                               "no_pay_before_check"))
    if clean:
        for rule in ("never_leak", "no_pay_before_check"):
            expected = sum(violates_directly(history, s[:horizon], rule)
                           for s in samples) / len(samples)
            assert answer.risk[rule] == expected
    # Samples are independent: the whole is the mean of its parts.
    parts = [sample_risk(RULESET, state, [s], horizon, monitor_class=cls) for s in samples]
    for rule in answer.risk:
        assert abs(answer.risk[rule] - sum(p.risk[rule] for p in parts) / len(parts)) < 1e-12
    # The session's monitor was read, not advanced.
    assert monitor.steps == len(history)


def test_the_first_violation_step_is_reported_per_sample():
    samples = [[{"labels": ["other"]}, {"labels": ["leak"]}], [{"labels": ["pay"]}]]
    answer = sample_risk(RULESET, None, samples, 5)
    assert answer.first_violation == [{"never_leak": 1}, {"no_pay_before_check": 0}]
    assert answer.risk == {"no_pay_before_check": 0.5, "never_leak": 0.5}
    assert sample_risk(RULESET, None, samples, 1).risk["never_leak"] == 0.0


def test_a_label_function_sees_each_event_and_the_one_before():
    seen = []

    def label(event, previous):
        seen.append((event["n"], previous and previous["n"]))
        return {"labels": ["leak"] if event["n"] == 2 else []}

    answer = sample_risk(RULESET, None, [[{"n": 1}, {"n": 2}]], 3, previous={"n": 0},
                         label=label)
    assert seen == [(1, 0), (2, 1)]
    assert answer.risk["never_leak"] == 1.0
