"""Abstract states from the rule set's own monitors, and the validity of transitions."""

import subprocess
import sys
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.monitor import RuleSet, SessionMonitor
from studio.risk.abstraction import Abstraction

RULE_SETS = [
    [("approval", "G(pay -> O approved)"), ("reply", "G(ask -> F answer)")],
    [("order", "!pay U approved"), ("once", ("F answer", "first")),
     ("strict", ("!pay U approved", "first"))],
    [("again", ("G(ask -> X answer)", "every_verdict")), ("never", "G !(pay & ask)"),
     ("big", "G(data.amount > 100 -> !pay)")],
]

events = st.lists(st.fixed_dictionaries({
    "labels": st.lists(st.sampled_from(["pay", "approved", "ask", "answer", "other"]),
                       max_size=3, unique=True),
    "data": st.fixed_dictionaries({"amount": st.sampled_from([5, 150])})}), max_size=12)


def ruleset(rules):
    return RuleSet([(name, *formula) if isinstance(formula, tuple) else (name, formula)
                    for name, formula in rules])


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(range(len(RULE_SETS))), events)
def test_stepping_abstract_states_agrees_with_the_session_monitor(which, session):
    rules = ruleset(RULE_SETS[which])
    abstraction = Abstraction(rules)
    trace = abstraction.session(session)
    monitor = SessionMonitor(rules)
    state = abstraction.start()
    assert trace[0] == state
    for k, event in enumerate(session):
        labels = monitor.labels_for(event)
        changes = monitor.feed(event)
        state = abstraction.step(state, labels)
        assert state == trace[k + 1]
        found = {c["rule"] for c in changes if "violation" in c}
        for name, violated in zip(abstraction.rules, state.violated):
            if name in found:
                assert violated   # every violation the monitor reports is an unsafe state
    if session:
        at_end = {r.rule for r in monitor.results() if any(v.at_end for v in r.violations)}
        assert trace[-1].kind == "end"
        assert {n for n, v in zip(abstraction.rules, trace[-1].violated) if v} == at_end


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(range(len(RULE_SETS))), st.lists(events, min_size=1, max_size=6),
       st.sampled_from([None, ("pay",), ("ask", "answer")]))
def test_every_observed_transition_is_valid(which, sessions, picked):
    rules = ruleset(RULE_SETS[which])
    if picked is not None:   # only atoms this rule set reads may be picked
        picked = [a for a in picked if a in Abstraction(rules).readable]
    abstraction = Abstraction(rules, atoms=picked)
    traces = [abstraction.session(s) for s in sessions]
    states = list(dict.fromkeys(s for t in traces for s in t))
    index = {s: i for i, s in enumerate(states)}
    valid = abstraction.valid_transitions(states).toarray()
    for trace in traces:
        for a, b in zip(trace, trace[1:]):
            assert valid[index[a], index[b]]


def test_what_the_monitors_cannot_do_is_not_valid():
    rules = ruleset([("approval", "G(pay -> O approved)")])
    abstraction = Abstraction(rules)
    trace = abstraction.session([{"labels": ["approved"]}, {"labels": ["pay"]},
                                 {"labels": ["pay"]}])
    other = abstraction.session([{"labels": ["pay"]}])
    states = list(dict.fromkeys(trace + other))
    index = {s: i for i, s in enumerate(states)}
    valid = abstraction.valid_transitions(states).toarray()
    remembered, violated = trace[2], other[1]
    assert violated.violated == (True,) and remembered.violated == (False,)
    # Once approved, the memory of it never fades: no step leads to the violating payment.
    assert not valid[index[remembered], index[violated]]
    assert valid[index[other[0]], index[violated]]
    assert not valid[index[trace[-1]], index[other[0]]]   # nothing leads back to the start


def test_exclusions_forbid_label_sets():
    rules = ruleset([("never", "G !(pay & ask)"), ("reply", "G(ask -> F answer)")])
    abstraction = Abstraction(rules, exclusions=[("pay", "ask")])
    trace = abstraction.session([{"labels": ["ask"]}, {"labels": ["pay"]},
                                 {"labels": ["pay", "ask"]}])
    states = list(dict.fromkeys(trace))
    index = {s: i for i, s in enumerate(states)}
    valid = abstraction.valid_transitions(states).toarray()
    both = trace[3]
    assert both.labels == ("ask", "pay")
    assert not valid[:, index[both]].any()
    assert valid[index[trace[1]], index[trace[2]]]


def test_picked_atoms_narrow_the_labels_and_unknown_ones_are_refused():
    rules = ruleset([("reply", "G(ask -> F answer)"), ("approval", "G(pay -> O approved)")])
    abstraction = Abstraction(rules, atoms=["pay"])
    trace = abstraction.session([{"labels": ["ask", "pay", "approved"]}])
    assert trace[1].labels == ("pay",)
    assert trace[1].monitors[0] != trace[0].monitors[0]   # the open answer is still there
    with pytest.raises(ValueError, match=r"atoms: refund not read by any rule"):
        Abstraction(rules, atoms=["pay", "refund"])
    with pytest.raises(ValueError, match=r"exclusions\[0\]"):
        Abstraction(rules, exclusions=[("pay",)])


def test_states_round_trip_through_json():
    rules = ruleset(RULE_SETS[0])
    abstraction = Abstraction(rules)
    from studio.risk.abstraction import AbstractState
    for state in abstraction.session([{"labels": ["ask"]}, {"labels": ["pay"]}]):
        assert AbstractState.from_json(state.to_json()) == state


def test_the_risk_package_does_not_import_django():
    code = ("import sys, studio.risk.predictor, studio.risk.check; "
            "print('django' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def test_violated_flags_are_numpy_friendly():
    rules = ruleset(RULE_SETS[0])
    trace = Abstraction(rules).session([{"labels": ["pay"]}])
    assert np.array([s.violated for s in trace]).shape == (3, 2)


def valid_by_definition(abstraction, states):
    """The definition read directly: i -> j is valid when some allowed label set steps i to j
    (or j is the end that i reaches by ending)."""
    index = {s: i for i, s in enumerate(states)}
    out = np.zeros((len(states), len(states)), dtype=bool)
    for i, state in enumerate(states):
        if state.kind == "end":
            continue
        for labels in abstraction.candidate_label_sets(states):
            j = index.get(abstraction.step(state, labels))
            if j is not None:
                out[i, j] = True
        if abstraction.end_of_session and state.kind == "step":
            j = index.get(abstraction.end(state))
            if j is not None:
                out[i, j] = True
    return out


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(range(len(RULE_SETS))), st.lists(events, min_size=1, max_size=8),
       st.sampled_from([None, ("pay",), ("ask", "answer")]), st.booleans())
def test_valid_transitions_agree_with_the_definition(which, sessions, picked, exclude):
    rules = ruleset(RULE_SETS[which])
    readable = Abstraction(rules).readable
    if picked is not None:
        picked = [a for a in picked if a in readable]
    exclusions = [("pay", "ask")] if exclude and {"pay", "ask"} <= set(readable) else []
    abstraction = Abstraction(rules, atoms=picked, exclusions=exclusions)
    traces = [abstraction.session(s) for s in sessions]
    states = list(dict.fromkeys(s for t in traces for s in t))
    fast = abstraction.valid_transitions(states).toarray().astype(bool)
    assert (fast == valid_by_definition(abstraction, states)).all()


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(range(len(RULE_SETS))), st.lists(events, min_size=1, max_size=8),
       st.sampled_from([None, ("pay",), ("ask", "answer")]))
def test_valid_transitions_stay_exact_when_every_hash_collides(which, sessions, picked):
    """Successors are found by a hash of their monitor numbers and then checked: with every
    hash equal, the check alone must still give the definition."""
    from studio.risk import abstraction as module

    rules = ruleset(RULE_SETS[which])
    readable = Abstraction(rules).readable
    if picked is not None:
        picked = [a for a in picked if a in readable]
    abstraction = Abstraction(rules, atoms=picked)
    states = list(dict.fromkeys(s for e in sessions for s in abstraction.session(e)))
    with mock.patch.object(module, "_hash_weights",
                           lambda rules: np.zeros((2, rules), dtype=np.int64)):
        colliding = abstraction.valid_transitions(states).toarray().astype(bool)
    assert (colliding == valid_by_definition(abstraction, states)).all()


def test_valid_transitions_of_twenty_rules_agree_with_the_definition():
    """The benchmark's 20 rules (data atoms, past and bounded operators) over agent-like
    sessions: hundreds of states and label sets, each rule reading a different part."""
    from bench.workloads import RULES_20, agent_events

    abstraction = Abstraction(RuleSet(RULES_20))
    stream = agent_events(240, seed=11)
    states = list(dict.fromkeys(s for k in range(0, 240, 12)
                                for s in abstraction.session(stream[k:k + 12])))
    assert len(states) > 150
    fast = abstraction.valid_transitions(states).toarray().astype(bool)
    expected = valid_by_definition(abstraction, states)
    assert fast.sum() > len(states)   # more than the observed transitions and the ends
    assert (fast == expected).all()
