"""Domain predicates (paper 004, 3.2): evaluation, JSON, proposals, the model with them, merging
rare states and the cap, and the precision and recall of alarms on held-out sessions."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.monitor import RuleSet
from studio.risk.abstraction import AbstractState, Abstraction
from studio.risk.predicates import (
    Predicate, PredicateError, ProposalData, action_of, future_violations, predicates_from_json,
    propose,
)
from studio.risk.predictor import (
    ANY_RULE, RiskModel, Traces, alarm_quality, held_out_quality,
)

# ---------------------------------------------------------------------------------------------
# Evaluation against an independent reading

values = st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False), st.booleans(),
                   st.sampled_from(["a", "b", "c"]), st.none())
field_ops = st.sampled_from([">", ">=", "<", "<=", "==", "!="])


def oracle_field(op, found, value) -> bool:
    """The comparison read the plain way: numbers with numbers, texts with texts, equal only
    within one kind; anything missing is false."""
    def kind(v):
        if isinstance(v, bool):
            return "bool"
        if isinstance(v, (int, float)):
            return "number"
        if isinstance(v, str):
            return "text"
        return "other"

    if found is None and kind(value) != "other":
        same = False
    else:
        same = kind(found) == kind(value)
    if op == "==":
        return same and found == value
    if op == "!=":
        return not (same and found == value)
    if not same or kind(found) not in ("number", "text"):
        return False
    return {">": found > value, ">=": found >= value, "<": found < value,
            "<=": found <= value}[op]


@settings(max_examples=300, deadline=None)
@given(field_ops, values, st.one_of(st.integers(-5, 5), st.sampled_from(["a", "b"]),
                                     st.booleans()), st.booleans())
def test_a_field_predicate_reads_as_a_plain_comparison(op, found, value, present):
    event = {"data": {"x": found}} if present else {"data": {}}
    p = Predicate("field", path="data.x", op=op, value=value)
    if not present:
        assert p.holds(event) is False
    elif found is None:
        # null is a value of its own kind: unequal to everything but null
        assert p.holds(event) == (op == "!=")
    else:
        assert p.holds(event) == oracle_field(op, found, value)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["take knife", "look", "eat", None]), min_size=1, max_size=6),
       st.sampled_from(["take knife", "look"]), st.sampled_from([1, 2]))
def test_an_action_predicate_reads_this_step_and_the_one_before(actions, action, within):
    p = Predicate("action", action=action, within=within)
    rules = RuleSet([("r", "G !never")])
    abstraction = Abstraction(rules, predicates=[p])
    events = [{"output": a} if a else {"output": {"text": "no action"}} for a in actions]
    trace = abstraction.session(events)
    for k, state in enumerate(trace[1:len(events) + 1]):
        window = actions[max(0, k - within + 1):k + 1]
        assert state.features == (action in window,)


def test_label_and_class_predicates_and_actions_of_tool_calls():
    assert Predicate("label", atom="pay").holds({"labels": ["pay", "x"]})
    assert not Predicate("label", atom="pay").holds({"labels": None})
    in_class = Predicate.from_json({"kind": "field", "path": "data.status", "op": "in",
                                    "value": ["held", "open"]})
    assert in_class.holds({"data": {"status": "open"}})
    assert not in_class.holds({"data": {"status": "paid"}})
    assert in_class.name == 'data.status in {"held", "open"}'
    assert action_of({"output": {"tool": "refund"}}) == "refund"
    assert action_of({"output": {"tool_calls": [{"function": {"name": "pay"}}]}}) == "pay"
    assert action_of({"output": "  take knife "}) == "take knife"
    assert action_of({"output": "x" * 500}) is None


predicate_data = st.one_of(
    st.builds(lambda a: {"kind": "label", "atom": a}, st.sampled_from(["pay", "in_kitchen"])),
    st.builds(lambda path, op, v: {"kind": "field", "path": path, "op": op, "value": v},
              st.sampled_from(["data.amount", "input.args.to"]), field_ops,
              st.one_of(st.integers(-100, 100), st.sampled_from(["x", "y"]))),
    st.builds(lambda vs: {"kind": "field", "path": "data.status", "op": "in", "value": vs},
              st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True)),
    st.builds(lambda a, w: {"kind": "action", "action": a, "within": w},
              st.sampled_from(["take knife", "refund"]), st.sampled_from([1, 2])))


@settings(max_examples=200, deadline=None)
@given(predicate_data)
def test_predicates_round_trip_through_json(data):
    p = Predicate.from_json(data)
    assert Predicate.from_json(p.to_json()) == p
    assert predicates_from_json([p.to_json()]) == (p,)


@pytest.mark.parametrize("data, field, words", [
    ({"kind": "colour"}, "predicates[0].kind", "kind must be one of"),
    ({"kind": "label"}, "predicates[0].atom", "non-empty text"),
    ({"kind": "field", "path": "data.x", "op": "~", "value": 1}, "predicates[0].op", "op must"),
    ({"kind": "field", "path": "data..x", "op": ">", "value": 1}, "predicates[0].path", "dots"),
    ({"kind": "field", "path": "data.x", "op": ">"}, "predicates[0].value", "needs a value"),
    ({"kind": "field", "path": "data.x", "op": ">", "value": True}, "predicates[0].value",
     "number or a text"),
    ({"kind": "field", "path": "data.x", "op": "in", "value": []}, "predicates[0].value",
     "non-empty list"),
    ({"kind": "field", "path": "data.x", "op": "in", "value": [1, {}]},
     "predicates[0].value[1]", "a number, a text"),
    ({"kind": "action", "action": "go", "within": 3}, "predicates[0].within", "1 to 2"),
    ({"kind": "action", "action": "go", "colour": 1}, "predicates[0].colour", "no field"),
    ("label", "predicates[0]", "an object"),
])
def test_a_predicate_that_does_not_read_is_refused_naming_the_field(data, field, words):
    with pytest.raises(PredicateError) as caught:
        predicates_from_json([data])
    assert caught.value.field == field
    assert words in caught.value.message


def test_a_repeated_predicate_and_too_many_are_refused():
    one = {"kind": "label", "atom": "pay"}
    with pytest.raises(PredicateError, match=r"predicates\[1\]: repeats predicates\[0\]"):
        predicates_from_json([one, dict(one)])
    with pytest.raises(PredicateError, match="at most 8"):
        predicates_from_json([{"kind": "label", "atom": f"a{i}"} for i in range(9)])


def test_future_violations_against_a_plain_loop():
    rng = random.Random(1)
    for _ in range(200):
        flags = [rng.random() < 0.2 for _ in range(rng.randint(0, 12))]
        h = rng.randint(1, 4)
        expected = [any(flags[i + 1:i + 1 + h]) for i in range(len(flags))]
        assert future_violations(flags, h) == expected


# ---------------------------------------------------------------------------------------------
# The knife: one hidden predicate decides the violation

KNIFE_RULES = [("knife_needed", "G(take_knife -> F[1,4] use_knife)"), ("no_drop", "G !drop")]


def knife_event(command: str, to_cut: int) -> dict:
    labels = []
    if command == "take knife":
        labels.append("take_knife")
    if command.startswith("slice"):
        labels.append("use_knife")
    if command.startswith("drop"):
        labels.append("drop")
    return {"output": command, "labels": labels,
            "data": {"to_cut": to_cut, "room": "kitchen", "turn_colour": "blue"}}


def knife_session(rng: random.Random) -> list[dict]:
    """A TextWorld-like episode: with something left to cut, the knife taken is used within a
    few steps (mostly); with nothing left, it never is, and the rule is broken."""
    to_cut = rng.choice([0, 0, 1, 2, 3])
    out, pending = [], False
    for _ in range(rng.randint(10, 16)):
        if pending and to_cut > 0 and rng.random() < 0.6:
            out.append(knife_event("slice carrot with knife", to_cut))
            to_cut -= 1
            pending = False
            continue
        r = rng.random()
        command = ("take knife" if r < 0.15 else "drop apple" if r < 0.17 else
                   rng.choice(["look", "examine carrot", "open fridge", "inventory"]))
        out.append(knife_event(command, to_cut))
        pending = pending or command == "take knife"
    return out


@pytest.fixture(scope="module")
def knife():
    rng = random.Random(4)
    sessions = [knife_session(rng) for _ in range(600)]
    abstraction = Abstraction(RuleSet(KNIFE_RULES))
    traces = Traces(abstraction)
    data = ProposalData(horizon=4)
    for events in sessions:
        numbers = traces.add(events)
        data.add(events, [traces.states[i] for i in numbers])
    return sessions, abstraction, traces, data


def test_the_proposer_ranks_the_hidden_predicate_first_and_the_other_half_agrees(knife):
    _, abstraction, _, data = knife
    proposals = propose(data, skip_atoms=abstraction.readable)
    best = proposals[0]
    assert best.predicate == Predicate("field", path="data.to_cut", op=">", value=0)
    assert best.confirmed and best.held_out_gain > 0.05
    assert best.gain > 5 * max(p.gain for p in proposals[1:])
    # Where it matters: after "take knife", nothing left to cut always ends in a violation.
    assert best.context == "take knife"
    assert best.context_otherwise.violate > 0.9 > 0.4 > best.context_holds.violate
    assert best.held_out_context_otherwise.violate > 0.9 > 0.4 > \
        best.held_out_context_holds.violate
    sentence = best.sentence()
    assert sentence.startswith("After take knife, where data.to_cut is above 0: ")
    assert "within 4 steps" in sentence and "on the held-out sessions" in sentence
    # Excluded (already on the model) it is not proposed again.
    again = propose(data, exclude=[best.predicate], skip_atoms=abstraction.readable)
    assert best.predicate not in [p.predicate for p in again]


def test_with_the_proposed_predicate_the_two_knife_pickups_get_two_risks(knife):
    sessions, abstraction, traces, data = knife
    with_nothing = [knife_event("look", 0), knife_event("take knife", 0)]
    with_carrot = [knife_event("look", 2), knife_event("take knife", 2)]
    plain = traces.model()
    one = plain.answer(abstraction.session(with_nothing)[2], 4).risk[ANY_RULE]
    other = plain.answer(abstraction.session(with_carrot)[2], 4).risk[ANY_RULE]
    assert one == other   # the rules alone see one state

    chosen = propose(data, skip_atoms=abstraction.readable)[0].predicate
    richer = Abstraction(RuleSet(KNIFE_RULES), predicates=[chosen])
    model = RiskModel.learn(richer, sessions)
    nothing = model.answer(richer.session(with_nothing)[2], 4)
    carrot = model.answer(richer.session(with_carrot)[2], 4)
    assert nothing.known and carrot.known
    assert nothing.risk[ANY_RULE] > 0.9 and carrot.risk[ANY_RULE] < 0.4
    # The live way (predict from the session's monitor) gives the same.
    from studio.monitor import SessionMonitor

    monitor = SessionMonitor(richer.ruleset, witnesses=False)
    monitor.feed(knife_event("look", 0))
    live = model.predict(monitor, knife_event("take knife", 0), 4,
                         recent=[knife_event("look", 0)])
    assert live.risk == nothing.risk
    # Stored and loaded, it answers the same.
    loaded = RiskModel.from_json(model.to_json(compact=True), richer.ruleset)
    assert loaded.abstraction.predicates == (chosen,)
    assert loaded.answer(richer.session(with_nothing)[2], 4).risk == nothing.risk
    # Its alarms on held-out sessions are more precise than without it.
    before = held_out_quality(traces, 4, 0.5)
    richer_traces = Traces(richer)
    for events in sessions:
        richer_traces.add(events)
    after = held_out_quality(richer_traces, 4, 0.5)
    assert after.steps == before.steps
    assert after.precision > before.precision + 0.1


def test_alarm_quality_counts_against_a_direct_count(knife):
    sessions, abstraction, traces, _ = knife
    model = traces.subset(range(0, 200)).model()
    held = [abstraction.session(s) for s in sessions[200:260]]
    quality = alarm_quality(model, held, 3, 0.3)
    risks = model.risks(ANY_RULE, 3)
    tp = fp = fn = steps = 0
    for trace in held:
        bad = [any(s.violated) for s in trace]
        for k in range(1, len(trace)):
            if trace[k].kind != "step" or bad[k]:
                continue
            steps += 1
            i = model.index.get(trace[k])
            alarm = i is not None and risks[i] >= 0.3
            happened = any(bad[k + 1:k + 4])
            tp += alarm and happened
            fp += alarm and not happened
            fn += happened and not alarm
    assert (quality.steps, quality.true_alarms, quality.false_alarms, quality.missed) == (
        steps, tp, fp, fn)
    assert quality.precision == tp / (tp + fp) and quality.recall == tp / (tp + fn)


# ---------------------------------------------------------------------------------------------
# A hidden class of values, among many noisy fields


def test_a_hidden_value_class_is_found_among_noise():
    rng = random.Random(9)
    rules = RuleSet([("refund_checked", "G(refund -> X checked)")])
    sessions = []
    for _ in range(500):
        events = []
        for _ in range(rng.randint(6, 10)):
            status = rng.choice(["held", "open", "paid", "void", "new"])
            refund = rng.random() < 0.3
            events.append({"output": {"tool": "refund" if refund else "read"},
                           "labels": ["refund"] if refund else [],
                           "data": {"status": status, "noise": rng.randint(0, 100),
                                    "flag": rng.random() < 0.5}})
            if refund:
                # a refund of a held or open order is checked at once only half the time
                risky = status in ("held", "open")
                checked = rng.random() < (0.5 if risky else 0.97)
                events.append({"output": {"tool": "check" if checked else "read"},
                               "labels": ["checked"] if checked else [],
                               "data": {"status": status, "noise": rng.randint(0, 100),
                                        "flag": rng.random() < 0.5}})
        sessions.append(events)
    abstraction = Abstraction(rules)
    traces = Traces(abstraction)
    data = ProposalData(horizon=2)
    for events in sessions:
        numbers = traces.add(events)
        data.add(events, [traces.states[i] for i in numbers])
    best = propose(data, skip_atoms=abstraction.readable)[0]
    assert best.predicate in (
        Predicate("field", path="data.status", op="in", value=("held", "open")),
        Predicate("field", path="data.status", op="in", value=("new", "paid", "void")))
    assert best.confirmed


# ---------------------------------------------------------------------------------------------
# Validity with predicates, merging rare states, the cap


def test_predicates_never_make_a_transition_invalid():
    """i -> j is valid with predicates exactly when it is between the rules-only states."""
    rng = random.Random(2)
    rules = RuleSet(KNIFE_RULES)
    p = Predicate("field", path="data.to_cut", op=">", value=0)
    q = Predicate("action", action="look", within=2)
    richer = Abstraction(rules, predicates=[p, q])
    plain = Abstraction(rules)
    sessions = [knife_session(rng) for _ in range(60)]
    states = list(dict.fromkeys(s for e in sessions for s in richer.session(e)))
    valid = richer.valid_transitions(states).toarray().astype(bool)

    def bare(s):
        return AbstractState(s.kind, s.labels, s.monitors, s.violated)

    plain_states = list(dict.fromkeys(bare(s) for s in states))
    plain_valid = plain.valid_transitions(plain_states).toarray().astype(bool)
    where = {s: i for i, s in enumerate(plain_states)}
    expected = plain_valid[np.ix_([where[bare(s)] for s in states],
                                  [where[bare(s)] for s in states])]
    assert len(states) > len(plain_states)
    assert (valid == expected).all()


def test_rare_states_are_merged_into_their_coarser_state_and_the_cap_holds(knife):
    sessions, _, plain_traces, _ = knife
    predicates = [Predicate("field", path="data.to_cut", op=">", value=0),
                  Predicate("action", action="inventory", within=2),
                  Predicate("action", action="look", within=2)]
    richer = Abstraction(RuleSet(KNIFE_RULES), predicates=predicates)
    traces = Traces(richer)
    for events in sessions:
        traces.add(events)
    visits = dict(zip(traces.states, traces.visits().tolist()))
    merged = traces.merged(min_visits=20, max_states=10**6)
    seen = dict(zip(merged.states, merged.visits().tolist()))
    # Every state kept with predicates was seen at least 20 times; nothing is lost.
    assert all(v >= 20 for s, v in seen.items() if s.features)
    assert sum(seen.values()) == sum(visits.values())
    # A rare state went to its nearest coarser state that is seen often enough (or keeps none).
    for state, count in visits.items():
        if state.features and count < 20:
            coarse = state.coarser()
            while coarse not in seen:
                coarse = coarse.coarser()
            assert coarse in seen and (seen[coarse] >= 20 or not coarse.features)
    # The rules' own states are never merged: the same monitors and flags as before.
    bare = {(s.kind, s.labels, s.monitors, s.violated) for s in merged.states}
    assert bare == {(s.kind, s.labels, s.monitors, s.violated) for s in plain_traces.states}
    # The cap: at most max_states states while some still keep predicates.
    capped = traces.merged(min_visits=1, max_states=len(plain_traces.states) + 5)
    assert len(capped.states) <= len(plain_traces.states) + 5
    floor = traces.merged(min_visits=1, max_states=1)
    assert len(floor.states) == len(plain_traces.states)   # as coarse as the rules allow
    # A live state that was merged is answered from the state it went to, and says so.
    model = traces.model(min_visits=20)
    rare = min((s for s in traces.states if s.features and s.kind == "step"),
               key=lambda s: visits[s])
    assert visits[rare] < 20 and rare not in model.index
    answer = model.answer(rare, 4)
    assert answer.known and "coarser state" in answer.reason
    i, dropped = model.find(rare)
    assert dropped >= 1 and model.states[i].features == rare.features[:len(rare.features)
                                                                       - dropped]
