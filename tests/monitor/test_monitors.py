"""TRAC, TRAC_R and instance-level monitoring against the independent finite-trace evaluator."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.logic import formula as fm
from studio.logic.finite import evaluate
from studio.logic.parser import parse
from studio.monitor import (
    InstanceMonitor,
    RuleError,
    RuleMachines,
    RuleSet,
    SessionMonitor,
    Trac,
    TracR,
    compile_rule,
)

from .strategies import formulas, oracle_trace, traces

SETTINGS = settings(max_examples=300, deadline=None)


def labels_of(trace, ruleset):
    """Label sets as the session monitor computes them (atoms plus holding data atoms)."""
    monitor = SessionMonitor(ruleset)
    out = []
    for event in trace:
        out.append(monitor.labels_for(event))
        monitor.feed(event)
    return out


@SETTINGS
@given(formulas(), traces)
def test_run_fast_path_equals_update(formula, trace):
    machines = RuleMachines(compile_rule("r", formula))
    label_sets = labels_of(trace, RuleSet([("r", formula)]))
    stepwise, batched = Trac(machines), Trac(machines)
    for labels in label_sets:
        stepwise.update(labels)
    batched.run(label_sets)
    assert batched.state is stepwise.state
    assert batched.steps == stepwise.steps == len(trace)
    assert batched.first_verdict_step == stepwise.first_verdict_step
    assert batched.witness == stepwise.witness


@SETTINGS
@given(formulas(depth=4), traces)
def test_instance_run_fast_path_equals_update(body, trace):
    rule = fm.G(body)
    if rule.op != "G":
        return
    machines = RuleMachines(compile_rule("r", rule))
    label_sets = labels_of(trace, RuleSet([("r", rule)]))
    stepwise, batched = InstanceMonitor(machines), InstanceMonitor(machines)
    failed = sum(stepwise.update(labels) for labels in label_sets)
    assert batched.run(label_sets) == failed
    assert batched.steps == stepwise.steps == len(trace)
    assert batched.to_json() == stepwise.to_json()


@SETTINGS
@given(formulas(), traces)
def test_trac_r_violations_are_sound(formula, trace):
    """Each TRAC_R violation (round start r, detected k): the rule is false at r on the trace up
    to k and on every longer prefix."""
    machines = RuleMachines(compile_rule("r", formula))
    monitor = TracR(machines)
    for labels in labels_of(trace, RuleSet([("r", formula)])):
        monitor.update(labels)
    steps = oracle_trace(trace)
    for v in monitor.violations:
        assert v.trigger <= v.detected
        for end in range(v.detected, len(trace)):
            assert evaluate(formula, steps[:end + 1])[v.trigger] is False
    for start, done in monitor.satisfactions:
        for end in range(done, len(trace)):
            assert evaluate(formula, steps[:end + 1])[start] is True


@SETTINGS
@given(formulas(depth=4), traces)
def test_instance_level_reports_exactly_the_failing_obligations(body, trace):
    """G phi: the triggers of all violations (during the session and at its end) are exactly
    the steps where the oracle says phi is false, and each detection is sound."""
    rule = fm.G(body)
    if rule.op != "G":  # simplified away (G true)
        return
    machines = RuleMachines(compile_rule("r", rule))
    monitor = InstanceMonitor(machines)
    for labels in labels_of(trace, RuleSet([("r", rule)])):
        monitor.update(labels)
    steps = oracle_trace(trace)
    body_values = evaluate(machines.rule.body, steps)
    found = monitor.violations + monitor.end_violations()
    assert sorted(v.trigger for v in found) == [t for t, ok in enumerate(body_values) if not ok]
    for v in monitor.violations:
        for end in range(v.detected, len(trace)):
            assert evaluate(machines.rule.body, steps[:end + 1])[v.trigger] is False
        # Each violation's own witness starts no earlier than its trigger and ends at detection.
        assert v.witness and v.witness[-1].step == v.detected
        assert v.witness[0].step >= v.trigger
        assert v.witness[-1].residual is fm.FALSE


@SETTINGS
@given(st.lists(formulas(depth=4), min_size=1, max_size=3), traces, st.data())
def test_resume_from_json_equals_uninterrupted_run(rule_formulas, trace, data):
    rules = [(f"r{i}", f) for i, f in enumerate(rule_formulas)]
    cut = data.draw(st.integers(0, len(trace)))
    whole = SessionMonitor(RuleSet(rules))
    changes_whole = [whole.feed(e) for e in trace]

    first = SessionMonitor(RuleSet(rules))
    changes = [first.feed(e) for e in trace[:cut]]
    saved = json.dumps(first.to_json())
    # A fresh rule set: nothing shared with the first run but the text.
    resumed = SessionMonitor.from_json(RuleSet(rules), json.loads(saved))
    changes += [resumed.feed(e) for e in trace[cut:]]

    assert changes == changes_whole
    assert json.dumps(resumed.to_json(), sort_keys=True) == json.dumps(whole.to_json(),
                                                                      sort_keys=True)
    assert [r.to_json() for r in resumed.results()] == [r.to_json() for r in whole.results()]


def run_session(rules, events):
    """Per rule name, its result; ``rules``: ``(name, formula[, counting])``."""
    monitor = SessionMonitor(RuleSet(rules))
    for e in events:
        monitor.feed(e)
    return {r.rule: r for r in monitor.results()}


def test_trac_witness_records_each_residual_change_with_its_event():
    result = SessionMonitor(RuleSet([("ship", "!ship U paid")]))
    events = [{"labels": [], "input": "hi", "output": "a"},
              {"labels": ["paid"], "input": "pay", "output": "b"},
              {"labels": ["ship"], "input": "ship", "output": "c"}]
    for e in events:
        result.feed(e)
    trac = result.trac[0]
    assert [(w.step, w.input, w.output, w.residual.text) for w in trac.witness] == [
        (1, "pay", "b", "true")]
    assert trac.first_verdict_step == 1


def test_counting_decides_which_verdicts_restart_the_rule():
    # "Do not ship before paying": a shipment at step 0 violates; the payment at step 2 meets
    # the rule; two shipments follow.
    events = [{"labels": ["ship"]}, {"labels": []}, {"labels": ["paid"]}, {"labels": ["ship"]},
              {"labels": ["ship"]}]

    def counted(counting):
        result = run_session([("pay_first", "!ship W paid", counting)], events)["pay_first"]
        assert result.verdict == "violated" and result.first_verdict_step == 0
        assert result.counting == (counting or "after_violation")
        return [(v.trigger, v.detected) for v in result.violations]

    # Algorithm 2 restarts after the payment too, so each later shipment is a new violation.
    assert counted("every_verdict") == [(0, 0), (3, 3), (4, 4)]
    # Restarting only after violations: once paid, the rule stays met (the default).
    assert counted("after_violation") == counted(None) == [(0, 0)]
    assert counted("first") == [(0, 0)]
    repeated = [{"labels": ["ship"]}, {"labels": ["ship"]}, {"labels": ["paid"]},
                {"labels": ["ship"]}]
    by_mode = {c: [(v.trigger, v.detected) for v in run_session(
        [("r", "!ship W paid", c)], repeated)["r"].violations]
        for c in ("first", "after_violation", "every_verdict")}
    assert by_mode == {"first": [(0, 0)], "after_violation": [(0, 0), (1, 1)],
                       "every_verdict": [(0, 0), (1, 1), (3, 3)]}


def test_counting_that_does_not_fit_the_rule_is_refused():
    with pytest.raises(RuleError, match="'per_instance' needs a rule of the form G"):
        compile_rule("r", "!ship W paid", "per_instance")
    with pytest.raises(RuleError, match="unknown counting 'twice'"):
        compile_rule("r", "G !ship", "twice")
    assert compile_rule("r", "G !ship").counting == "per_instance"
    assert compile_rule("r", "G !ship", "first").instance_level is False


@SETTINGS
@given(formulas(), traces, st.sampled_from(["first", "after_violation", "every_verdict"]))
def test_each_counting_counts_sound_violations_in_its_rounds(formula, trace, counting):
    """Every counted violation is sound for its round (the rule is false from the round's start
    on the trace up to its detection and on every longer prefix); rounds restart exactly after
    the verdicts the counting names; ``first`` agrees with TRAC without reset."""
    rule = compile_rule("r", formula, counting)
    monitor = SessionMonitor(RuleSet([rule]))
    for event in trace:
        monitor.feed(event)
    result = monitor.results()[0]
    steps = oracle_trace(trace)
    during = [v for v in result.violations if not v.at_end]
    for v in during:
        for end in range(v.detected, len(trace)):
            assert evaluate(formula, steps[:end + 1])[v.trigger] is False
    tracr = monitor.violation_monitors[0]
    starts = sorted([(v.trigger, v.detected, "violated") for v in during]
                    + [(s, d, "satisfied") for s, d in tracr.satisfactions])
    expected_start = 0
    for start, detected, verdict in starts:
        assert start == expected_start  # rounds follow one another without gaps
        restarts = counting == "every_verdict" or (
            counting == "after_violation" and verdict == "violated")
        if not restarts:
            assert (start, detected, verdict) == starts[-1]  # the verdict stands
        expected_start = detected + 1
    if counting == "first" and trace:
        assert len(result.violations) == (result.final == "violated"
                                          if result.verdict == "pending"
                                          else result.verdict == "violated")
    # The one verdict: violated exactly when a violation was counted, else the end verdict.
    verdict = result.session_verdict()
    assert (verdict == "violated") == bool(result.violations or result.final == "violated")
    if result.violations:
        assert verdict == "violated"


def test_instance_level_keeps_every_obligation_through_violations():
    # G(p -> X q): each p needs q next; two separate failures and one at the end of the session.
    events = [{"labels": ["p"]}, {"labels": []}, {"labels": ["p"]}, {"labels": ["q", "p"]},
              {"labels": []}, {"labels": ["p"]}]
    result = run_session([("next_q", "G(p -> X q)")], events)["next_q"]
    assert [(v.trigger, v.detected, v.at_end) for v in result.violations] == [
        (0, 1, False), (3, 4, False), (5, 5, True)]
    assert result.final == "violated"


def test_past_operators_use_the_whole_history_across_resets():
    # grant needs an earlier request; the request at step 0 still counts after a reset.
    events = [{"labels": ["request"]}, {"labels": ["grant"]}, {"labels": ["grant"]}]
    result = run_session([("granted", "G(grant -> O request)")], events)["granted"]
    assert result.violations == [] and result.final == "satisfied"
    late = run_session([("granted", "G(grant -> O request)")],
                       [{"labels": ["grant"]}, {"labels": ["request"]}, {"labels": ["grant"]}])
    assert [(v.trigger, v.detected) for v in late["granted"].violations] == [(0, 0)]


def test_data_atoms_read_the_event_and_the_previous_event():
    rules = [("big", "G(output.args.amount > 10000 -> F approved)"),
             ("drop", "G(data.balance < prev(data.balance) -> X audit)")]
    events = [{"output": {"tool": "pay", "args": {"amount": 20000}}, "data": {"balance": 5}},
              {"labels": ["approved"], "data": {"balance": 3}},
              {"labels": ["audit"], "data": {"balance": "n/a"}},
              {"output": "text, no args", "data": {}}]
    results = run_session(rules, events)
    assert results["big"].final == "satisfied" and results["big"].violations == []
    assert results["drop"].violations == []  # the drop at step 1 was audited at step 2
    late = run_session(rules, events[:2])
    assert [(v.trigger, v.detected) for v in late["drop"].violations] == [(1, 1)]


def test_future_inside_past_is_refused_with_the_offending_subformula():
    with pytest.raises(RuleError, match=r"O F p"):
        compile_rule("bad", parse("G(q -> O F p)"))


def test_automata_are_shared_between_sessions_and_stay_small():
    ruleset = RuleSet([("resp", "G(p -> F q)")])
    for session in range(50):
        monitor = SessionMonitor(ruleset)
        for i in range(200):
            monitor.feed({"labels": ["p"] if (i + session) % 3 == 0 else ["q"] if i % 5 else []})
    machines = ruleset.machines[0]
    assert machines.trac.size <= 3 and machines.obligations.size <= 4
