"""``LiveGuards``: guards decided as events arrive, in any arrival order that keeps each lifeline's
own order - receives before their sends included - with the values ``run_monitor`` finds over the
whole session's MSC."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.causal import build_msc, run_monitor
from studio.causal.examples import LIFELINES, MERGE_CHOICE_INDEX, MERGE_GUARDS, merge_scenario
from studio.causal.live import LiveGuards, NewLifeline

from .strategies import GUARD_NAMES, executions, formulas, remote_formulas


def answers_of(guards: LiveGuards, events) -> list:
    return [a for event in events for a in guards.add(event)]


def test_the_merge_scenario_in_log_order_is_decided_at_each_choice():
    guards = LiveGuards(MERGE_GUARDS, LIFELINES)
    answers = answers_of(guards, merge_scenario(with_delivery=True))
    assert [(a.step, a.guard, a.value) for a in answers] == [
        (MERGE_CHOICE_INDEX, "merge_ok", True), (11, "merge_ok", False)]
    first, second = answers
    assert first.lifeline == "Committer"
    assert dict(first.seen) == {"Orchestrator": 2, "TestRunner": 3, "Committer": 3}
    assert "holds over the causal past" in first.reason
    assert "is false over the causal past" in second.reason
    assert dict(second.seen)["TestRunner"] == 5


def test_a_receive_before_its_send_holds_its_lifeline_until_the_send_arrives():
    events = merge_scenario()
    proposal_send = events.pop(5)            # the Orchestrator's proposal arrives last
    guards = LiveGuards(MERGE_GUARDS, LIFELINES)
    early = answers_of(guards, events)
    assert [(a.step, a.value) for a in early] == [(MERGE_CHOICE_INDEX, None)]
    assert "'proposal-1'" in early[0].reason and "before its send" in early[0].reason
    assert guards.held == 2                  # the receive and the choice after it
    late = guards.add(proposal_send)
    assert [(a.step, a.guard, a.value) for a in late] == [(MERGE_CHOICE_INDEX, "merge_ok", True)]
    assert guards.held == 0


def test_unknown_guards_foreign_owners_and_bad_choices_are_answered_not_raised():
    guards = LiveGuards(MERGE_GUARDS, LIFELINES, unknown="not declared here")
    event = {"step": 0, "lifeline": "Orchestrator",
             "data": {"choice": ["nope", "merge_ok"]}}
    nope, foreign = guards.add(event)
    assert (nope.guard, nope.value, nope.reason) == ("nope", None, "'nope': not declared here")
    assert foreign.value is None and "decided by lifeline Committer only" in foreign.reason
    (bad,) = guards.add({"step": 1, "lifeline": "Committer", "data": {"choice": 7}})
    assert bad.guard is None and bad.value is None and "data.choice" in bad.reason
    assert guards.add({"step": 2, "lifeline": "Committer", "data": {"choice": []}})[0].value \
        is None
    with pytest.raises(NewLifeline):
        guards.add({"step": 3, "lifeline": "Reviewer", "data": {}})


def test_a_message_sent_twice_stops_the_decisions_with_the_reason():
    guards = LiveGuards(MERGE_GUARDS, LIFELINES)
    send = {"lifeline": "TestRunner", "data": {}, "message_id": "m", "message_kind": "send",
            "message_peer": "Committer"}
    guards.add({**send, "step": 0})
    guards.add({**send, "step": 1})
    (answer,) = guards.add({"step": 2, "lifeline": "Committer", "data": {"choice": "merge_ok"}})
    assert answer.value is None and "step 1: message sent twice" in answer.reason


def test_a_guard_that_cannot_be_read_leaves_the_others_decided():
    guards = LiveGuards({"broken": "x ==", "fine": "x == 1"}, ["A"])
    broken, fine = guards.add({"step": 0, "lifeline": "A",
                               "data": {"x": 1, "choice": ["broken", "fine"]}})
    assert broken.value is None and "broken cannot be evaluated: line 1" in broken.reason
    assert fine.value is True


@st.composite
def arrivals(draw):
    """A session, its guards, and an arrival order: each lifeline's events in their order,
    lifelines interleaved at random - so a receive may arrive before its send."""
    lifelines, events = draw(executions())
    guards = {name: draw(formulas(lifelines)) for name in GUARD_NAMES[:-1]}
    guards[GUARD_NAMES[-1]] = draw(remote_formulas(lifelines))
    queues = {name: [e for e in events if e["lifeline"] == name] for name in lifelines}
    order = []
    while any(queues.values()):
        name = draw(st.sampled_from([n for n in lifelines if queues[n]]))
        order.append(queues[name].pop(0))
    return lifelines, events, guards, order


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(arrivals())
def test_any_arrival_order_gives_the_values_of_the_whole_sessions_msc(scenario):
    lifelines, events, guards, order = scenario
    expected = {(events[d.event_index]["step"], d.guard): d.causal_value
                for d in run_monitor(build_msc(events, lifelines=lifelines), guards,
                                     sequential=False)}
    live = LiveGuards(guards, lifelines)
    decided = {}
    for event in order:
        for answer in live.add(event):
            assert answer.value is not None or "not decided yet" in answer.reason
            decided[(answer.step, answer.guard)] = answer.value
    assert decided == expected
    assert live.held == 0
