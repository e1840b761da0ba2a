"""FastSessionMonitor gives exactly what SessionMonitor gives.

Random rule sets (every operator: past, bounded, data atoms reading the event and ``prev``;
instance-level ``G phi`` rules and the rest) over random sessions; both monitors run side by side
and everything observable must be equal: the changes ``feed`` returns, ``results()`` (verdicts,
first verdict steps, finals, residuals, violations with trigger, detection, ``at_end`` and
witnesses), ``to_json`` and the data atoms' ``previous``.  Rule sets are shared by several
sessions, as in an audit, so later sessions run on rows that earlier ones learnt.
"""

import json
from collections import UserDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.logic import formula as fm
from studio.logic.events import MISSING, compare, read_path
from studio.logic.formula import Comparison
from studio.monitor import RuleSet, SessionMonitor, fast
from studio.monitor.fast import FastSessionMonitor, holds, read, relevant_items

from .strategies import ATOMS, formulas

SETTINGS = settings(max_examples=300, deadline=None)

# ---------------------------------------------------------------------------------------------
# Random rule sets and sessions

# Values of every kind compare() tells apart, including ones that are equal across kinds.
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2, 4), st.sampled_from([0.0, 1.0, 2.5]),
                   st.sampled_from(["", "a", "b", "1"]), st.just([1, 2]), st.just({"z": 1}))
PATHS = ("data.x", "data.y", "data.x.z", "data.items.0", "data", "output.args.amount", "x")


_read_operands = st.one_of(st.tuples(st.just("path"), st.sampled_from(PATHS)),
                          st.tuples(st.just("prev"), st.sampled_from(PATHS)))
_operands = st.one_of(_read_operands, st.tuples(st.just("const"), VALUES.filter(
    lambda v: not isinstance(v, (list, dict)))))

# Data atoms as rules can spell them (the parser wants a path on the left, so saved residuals
# parse back), and any data atom the formula API can build (for labelling alone).
comparisons = st.builds(fm.Compare, _read_operands, st.sampled_from(fm.COMPARISONS), _operands)
any_comparisons = st.builds(fm.Compare, _operands, st.sampled_from(fm.COMPARISONS), _operands)


def rule_formulas():
    """Formulas of the shared strategy, some wrapped in G (instance-level monitoring), some
    guarded by a random data atom."""
    base = formulas(depth=4)
    return st.one_of(base, base.map(fm.G),
                     st.builds(lambda c, f: fm.G(fm.Implies(c, f)), comparisons, base))


rule_sets = st.lists(rule_formulas(), min_size=1, max_size=5).map(
    lambda fs: [(f"r{i}", f) for i, f in enumerate(fs)])

_data = st.fixed_dictionaries({}, optional={
    "x": st.one_of(VALUES, st.fixed_dictionaries({"z": VALUES})),
    "y": VALUES, "items": st.lists(VALUES, max_size=2)})

events = st.builds(
    lambda labels, data, payload, extra: {"labels": sorted(labels), "data": data,
                                          "input": payload[0], "output": payload[1], **extra},
    st.sets(st.sampled_from(ATOMS + ("s", "tool_call:x"))),
    st.one_of(_data, st.just("not a dict"), st.just(UserDict({"x": 3}))),
    st.sampled_from([(None, None), ("hi", None), (None, {"args": {"amount": 7}}),
                     ("q", {"args": {"amount": 2.5}})]),
    st.sampled_from([{}, {"x": 3}, {"labels": None}]))

sessions = st.lists(st.lists(events, max_size=25), min_size=1, max_size=4)


# ---------------------------------------------------------------------------------------------
# Comparing the two monitors

def witness_view(violations):
    return [(v.trigger, v.detected, v.at_end, tuple(w.normalised() for w in v.witness))
            for v in violations]


def observed(monitor, raw: bool = True) -> dict:
    """Everything a caller can read from a monitor (to_json includes previous and the step
    counters).  ``raw``: witness entries as they are too (their label sets hold the past
    operators' values, which the JSON leaves out; entries read back from JSON hold the labels
    as sorted names, so a resumed monitor is compared on the rest)."""
    results = monitor.results()
    out = {"results": [(r.rule, r.verdict, r.first_verdict_step, r.final, r.residual,
                        witness_view(r.violations)) for r in results],
           "json": json.dumps(monitor.to_json(), sort_keys=True, default=repr),
           "trac_witness": [tuple(w.normalised() for w in t.witness) for t in monitor.trac]}
    if raw:
        out["entries"] = ([list(r.violations) for r in results],
                          [t.witness for t in monitor.trac])
    return out


@SETTINGS
@given(rule_sets, sessions, st.booleans())
def test_feed_equals_session_monitor(rules, traces, witnesses):
    slow_rules, fast_rules = RuleSet(rules), RuleSet(rules)
    for trace in traces:
        slow = SessionMonitor(slow_rules, witnesses)
        fast = FastSessionMonitor(fast_rules, witnesses)
        for event in trace:
            assert fast.labels_for(event) == slow.labels_for(event)
            assert fast.feed(event) == slow.feed(event)
            assert fast.previous == slow.previous
        assert observed(fast) == observed(slow)


@SETTINGS
@given(rule_sets, sessions)
def test_ingest_equals_feed(rules, traces):
    """The audit's path: no list of changes, same results."""
    slow_rules, fast_rules = RuleSet(rules), RuleSet(rules)
    for trace in traces:
        slow = SessionMonitor(slow_rules)
        fast = FastSessionMonitor(fast_rules)
        for event in trace:
            slow.feed(event)
            fast.ingest(event)
        assert observed(fast) == observed(slow)


@SETTINGS
@given(rule_sets, sessions, st.data())
def test_feed_labels_equals_session_monitor(rules, traces, data):
    ruleset = RuleSet(rules)
    fast_rules = RuleSet(rules)
    for trace in traces:
        slow = SessionMonitor(ruleset)
        fast = FastSessionMonitor(fast_rules)
        for event in trace:
            labels = slow.labels_for(event)
            if data.draw(st.booleans()):
                assert fast.feed_labels(labels) == slow.feed_labels(labels)
            else:
                assert fast.feed(event) == slow.feed(event)
        assert observed(fast) == observed(slow)


@SETTINGS
@given(rule_sets, st.lists(events, max_size=30), st.data())
def test_resume_and_forget_mid_session(rules, trace, data):
    """Saved mid-session (by either monitor) and resumed by either, with forget_history on the
    way: the same as SessionMonitor run without a break."""
    cut = data.draw(st.integers(0, len(trace)))
    forget = data.draw(st.one_of(st.none(), st.integers(0, len(trace))))
    save_with = data.draw(st.sampled_from([SessionMonitor, FastSessionMonitor]))
    resume_with = data.draw(st.sampled_from([SessionMonitor, FastSessionMonitor]))

    def run(monitor, events, offset, out):
        for k, event in enumerate(events, offset):
            if k == forget:
                monitor.forget_history()
            out.append(monitor.feed(event))
        return monitor

    whole_changes, changes = [], []
    whole = run(SessionMonitor(RuleSet(rules)), trace, 0, whole_changes)
    ruleset = RuleSet(rules)  # one rule set for both halves, as a live worker keeps one
    first = run(save_with(ruleset), trace[:cut], 0, changes)
    saved = json.loads(json.dumps(first.to_json()))
    resumed = run(resume_with.from_json(ruleset, saved), trace[cut:], cut, changes)
    assert changes == whole_changes
    assert observed(resumed, raw=False) == observed(whole, raw=False)


@SETTINGS
@given(rule_sets, sessions)
def test_sessions_interleaved_on_one_rule_set(rules, traces):
    """Monitors of one rule set fed in turn (live ingestion) share rows as they learn them."""
    fast_rules = RuleSet(rules)
    slow = [SessionMonitor(RuleSet(rules)) for _ in traces]
    fast = [FastSessionMonitor(fast_rules) for _ in traces]
    for k in range(max(len(t) for t in traces)):
        for trace, s, f in zip(traces, slow, fast):
            if k < len(trace):
                assert f.feed(trace[k]) == s.feed(trace[k])
    for s, f in zip(slow, fast):
        assert observed(f) == observed(s)


@settings(max_examples=200, deadline=None)
@given(rule_sets, sessions, st.sampled_from([
    {"NODE_ROW_LIMIT": 1}, {"NODE_ROW_LIMIT": 2}, {"NODE_LIMIT": 2}, {"LABELS_LIMIT": 2},
    {"NODE_ROW_LIMIT": 1, "NODE_LIMIT": 2, "LABELS_LIMIT": 2}]))
def test_memo_limits_change_nothing(rules, traces, limits):
    """With memos bounded to almost nothing (rows that tell apart one or two label sets,
    tables of configurations and label sets that start afresh all the time), results are the
    same."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in limits.items():
            patch.setattr(fast, name, value)
        slow_rules, fast_rules = RuleSet(rules), RuleSet(rules)
        for trace in traces:
            slow = SessionMonitor(slow_rules)
            quick = FastSessionMonitor(fast_rules)
            for event in trace:
                assert quick.feed(event) == slow.feed(event)
            assert observed(quick) == observed(slow)


# Rules whose obligations spread over several residuals at once (bounded and nested future
# operators), with past operators: steps that open, move and discharge several groups.
TEMPLATES = ["G(p -> F[0,2] q)", "G(p -> F[1,3] (q | r))", "G(p -> X(q | X q))",
             "G(p -> q U r)", "G(p -> F q)", "G(q -> O p)", "G(p & Y r -> F[0,1] q)",
             "G(r -> (p S q) | F q)", "G F q", "!p W q", "G(p -> G[0,2] !r)"]
label_traces = st.lists(st.builds(lambda ls: {"labels": sorted(ls), "input": len(ls)},
                                  st.sets(st.sampled_from(["p", "q", "r"]))), max_size=60)


@SETTINGS
@given(st.lists(st.sampled_from(TEMPLATES), min_size=1, max_size=4, unique=True),
       st.lists(label_traces, min_size=1, max_size=3), st.booleans())
def test_obligations_over_many_residuals(texts, traces, witnesses):
    rules = [(f"t{i}", text) for i, text in enumerate(texts)]
    slow_rules, fast_rules = RuleSet(rules), RuleSet(rules)
    for trace in traces:
        slow = SessionMonitor(slow_rules, witnesses)
        fast = FastSessionMonitor(fast_rules, witnesses)
        for event in trace:
            slow.feed(event)
            fast.ingest(event)
        assert observed(fast) == observed(slow)


# ---------------------------------------------------------------------------------------------
# Data atoms

@settings(max_examples=1000, deadline=None)
@given(st.sampled_from(fm.COMPARISONS), st.one_of(VALUES, st.just(MISSING)),
       st.one_of(VALUES, st.just(MISSING), st.just(float("nan"))))
def test_holds_is_compare_on_values_read(op, left, right):
    event = {"l": left, "r": right}
    comparison = Comparison(("path", "l") if left is not MISSING else ("path", "absent"), op,
                            ("path", "r") if right is not MISSING else ("path", "absent"))
    assert holds(op, left, right) == compare(comparison, event)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(PATHS), st.lists(events, min_size=1, max_size=3))
def test_read_is_read_path(path, trace):
    parts = tuple(path.split("."))
    for event in trace:
        assert read(event, parts, path) == read_path(event, path) or (
            read(event, parts, path) is MISSING and read_path(event, path) is MISSING)


@SETTINGS
@given(st.lists(any_comparisons, min_size=1, max_size=6),
       st.lists(events, min_size=1, max_size=8))
def test_data_atoms_hold_as_compare_says(cmps, trace):
    """Compiled data atoms (path against constant, path against path, prev) hold exactly when
    compare() says so, and prev() reads what SessionMonitor keeps."""
    rules = [(f"c{i}", fm.F(c)) for i, c in enumerate(cmps)]
    slow = SessionMonitor(RuleSet(rules))
    fast = FastSessionMonitor(RuleSet(rules))
    for event in trace:
        assert fast.labels_for(event) == slow.labels_for(event)
        slow.feed(event)
        fast.feed(event)
        assert fast.previous == slow.previous


def test_relevant_items_include_atoms_inside_past_operators():
    from studio.logic.parser import parse
    items = relevant_items(parse("G(grant & data.x > 1 -> O (request S approved))"))
    assert set(items) >= {"grant", "request", "approved"}
    assert any(isinstance(i, fm.Formula) and i.op == "cmp" for i in items)


def test_prefix_prev_paths_keep_session_monitor_snapshot():
    """prev() of a path and of a path inside it: the snapshot is SessionMonitor's own."""
    rules = [("a", "G(prev(data) == data -> F p)"), ("b", "G(prev(data.x) == data.x -> F q)")]
    trace = [{"data": {"x": 1}}, {"data": {"x": 1}}, {"data": [1]}, {"data": {"x": 2}}]
    slow, fast = SessionMonitor(RuleSet(rules)), FastSessionMonitor(RuleSet(rules))
    for event in trace:
        assert fast.feed(event) == slow.feed(event)
        assert fast.previous == slow.previous
    assert observed(fast) == observed(slow)


@SETTINGS
@given(rule_sets, st.lists(events, max_size=20), st.lists(events, max_size=10),
       st.lists(events, max_size=10), st.booleans(), st.data())
def test_fork_steps_on_independently(rules, prefix, mine, theirs, witnesses, data):
    """A fork (what the guard tries each candidate step on) behaves as a monitor run without
    a break over the prefix and then its own events, whatever the original does meanwhile,
    and leaves the original as if it had never been forked."""
    kind = data.draw(st.sampled_from([SessionMonitor, FastSessionMonitor]))
    ruleset = RuleSet(rules)
    original = kind(ruleset, witnesses=witnesses)
    for event in prefix:
        original.feed(event)
    fork = original.fork()
    fork_changes = [fork.feed(event) for event in mine]
    original_changes = [original.feed(event) for event in theirs]

    def oracle(events):
        alone = SessionMonitor(RuleSet(rules), witnesses=witnesses)
        for event in prefix:
            alone.feed(event)
        return alone, [alone.feed(event) for event in events]

    alone, alone_changes = oracle(mine)
    assert fork_changes == alone_changes
    assert observed(fork, raw=False) == observed(alone, raw=False)
    alone, alone_changes = oracle(theirs)
    assert original_changes == alone_changes
    assert observed(original, raw=False) == observed(alone, raw=False)
