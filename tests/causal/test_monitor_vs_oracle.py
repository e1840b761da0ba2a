"""Theorem 5.1 of paper 001, tested: the online monitor agrees with the denotational semantics.

Random MSCs (random lifelines; local, send, receive and choice events; non-FIFO delivery; messages
left in transit; self-messages) are fed to the monitor in a random linearisation of their causal
order, and random guards (every CPL operator, comparisons of every kind of value, undefined
variables) are compared with ``DenotationalSemantics``, a plain reading of definition 3:

* at every event (``evaluate_now`` right after the event is processed), not only at choices;
* at choice events, through the decisions ``process`` returns;
* in the causal reading and in the sequential one (the log being the order of processing);
* the monitor's vector clocks against the causal past found by walking the MSC's edges.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.causal import CausalMonitor, DenotationalSemantics, build_msc, run_monitor
from studio.causal.parser import parse_cpl

from .strategies import GUARD_NAMES, executions, formulas, linearisations, remote_formulas

SETTINGS = settings(max_examples=250, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def scenarios(draw, timestamps=False):
    lifelines, events = draw(executions(timestamps=timestamps))
    msc = build_msc(events, lifelines=lifelines)
    guards = {name: draw(formulas(lifelines)) for name in GUARD_NAMES[:-1]}
    guards[GUARD_NAMES[-1]] = draw(remote_formulas(lifelines))
    order = draw(linearisations(msc))
    return msc, guards, order


@SETTINGS
@given(scenarios())
def test_online_values_equal_the_denotational_semantics_at_every_event(scenario):
    msc, guards, order = scenario
    causal = DenotationalSemantics(msc)
    sequential = DenotationalSemantics(msc, "sequential", log_order=order)
    monitor = CausalMonitor(msc.lifelines, guards)
    for i in order:
        event = msc.events[i]
        decisions = monitor.process(event.source, i)
        for name, guard in guards.items():
            expected = (causal.holds(guard, i), sequential.holds(guard, i))
            assert monitor.evaluate_now(event.lifeline, name) == expected, (name, guard.text, i)
        if event.kind == "choice":
            assert [d.guard for d in decisions] == list(GUARD_NAMES)
            for d in decisions:
                assert d.causal_value == causal.holds(guards[d.guard], i)
                assert d.sequential_value == sequential.holds(guards[d.guard], i)
                assert d.disagrees == (d.causal_value != d.sequential_value)
                assert d.causal_clock == msc.vector_clock(i)
        else:
            assert decisions == []


@SETTINGS
@given(scenarios())
def test_vector_clocks_count_the_causal_past(scenario):
    msc, _, order = scenario
    walk = DenotationalSemantics(msc)   # finds causal pasts by walking edges back
    monitor = CausalMonitor(msc.lifelines, {})
    for i in order:
        event = msc.events[i]
        monitor.process(event.source, i)
        clock = monitor.clock(event.lifeline)
        assert clock == msc.vector_clock(i)
        past = walk.visible(i)
        assert msc.causal_past(i) == past
        for b, name in enumerate(msc.lifelines):
            assert clock[b] == sum(1 for f in past if msc.events[f].lifeline == name)
    assert sorted(monitor.in_transit) == sorted(msc.events[i].message_id for i in msc.in_transit)


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios(timestamps=True))
def test_run_monitor_reads_the_log_by_timestamp_even_when_clocks_drift(scenario):
    # With drifting per-lifeline clocks the timestamp order is often not causal; the causal
    # reading still follows causality and the sequential one the timestamps.
    msc, guards, _ = scenario
    causal = DenotationalSemantics(msc)
    sequential = DenotationalSemantics(msc, "sequential")   # msc.log_order(): by timestamp
    decisions = run_monitor(msc, guards)
    assert len(decisions) == len(msc.choices) * len(GUARD_NAMES)
    for d in decisions:
        assert d.causal_value == causal.holds(guards[d.guard], d.event_index)
        assert d.sequential_value == sequential.holds(guards[d.guard], d.event_index)


@SETTINGS
@given(scenarios())
def test_the_causal_only_monitor_gives_the_same_causal_values(scenario):
    msc, guards, order = scenario
    both = CausalMonitor(msc.lifelines, guards)
    causal_only = CausalMonitor(msc.lifelines, guards, sequential=False)
    for i in order:
        source = msc.events[i].source
        a, b = both.process(source, i), causal_only.process(source, i)
        assert [d.causal_value for d in a] == [d.causal_value for d in b]
        assert all(d.sequential_value is None and not d.disagrees for d in b)


@settings(max_examples=300, deadline=None)
@given(formulas(("A", "B", "C")))
def test_printed_guards_parse_back_to_the_same_formula(guard):
    assert parse_cpl(guard.text) is guard
