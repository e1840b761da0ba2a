"""The learned predictor: risks from the state a candidate leads to, cached, PAC-backed or not."""

import base64
import json
import random
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.monitor import RuleSet, SessionMonitor
from studio.risk.abstraction import Abstraction
from studio.risk.predictor import ANY_RULE, RiskModel
from studio.risk.reach import reachability

from .chains import enumerate_bounded

RULES = [("approval", "G(pay -> O approved)"), ("reply", "G(ask -> F answer)")]


def sessions(count, seed=0):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        out.append([{"labels": rng.sample(["pay", "approved", "ask", "answer", "other"],
                                          rng.randint(0, 2))}
                    for _ in range(rng.randint(1, 6))])
    return out


@pytest.fixture(scope="module")
def model():
    return RiskModel.learn(Abstraction(RuleSet(RULES)), sessions(400))


def test_a_candidate_that_violates_a_rule_has_risk_one(model):
    monitor = SessionMonitor(RuleSet(RULES))
    answer = model.predict(monitor, {"labels": ["pay"]}, 3)
    assert answer.known and answer.risk["approval"] == 1.0 and answer.risk[ANY_RULE] == 1.0
    assert answer.backed   # nothing learned is needed to know it


def test_risks_are_the_chain_reachability_and_cached(model):
    monitor = SessionMonitor(RuleSet(RULES))
    monitor.feed({"labels": ["ask"]})
    answer = model.predict(monitor, {"labels": ["approved"]}, 2)
    i = answer.state
    expected = enumerate_bounded(model.chain.matrix, model.unsafe["reply"], 2)[i]
    assert answer.risk["reply"] == pytest.approx(expected, abs=1e-12)
    assert 0 < answer.risk["reply"] < 1 and answer.risk["approval"] == 0.0
    assert model.risks("reply", 2) is model.risks("reply", 2)   # solved once
    unbounded = model.predict(monitor, {"labels": ["approved"]}, None)
    assert unbounded.risk["reply"] == pytest.approx(
        reachability(model.chain.matrix, model.unsafe["reply"])[i])
    assert unbounded.risk["reply"] >= answer.risk["reply"]


def test_answers_say_whether_the_pac_bound_backs_them(model):
    # 400 short sessions are far below equation 2's ~1,100 transitions per state.
    monitor = SessionMonitor(RuleSet(RULES))
    answer = model.predict(monitor, {"labels": ["answer"]}, 3)
    assert answer.known and not answer.backed
    assert "fewer samples" in answer.reason
    rich = RiskModel.learn(Abstraction(RuleSet([("never", "G !pay")])),
                           [[{"labels": []}] * 3 for _ in range(30)]
                           + [[{"labels": ["pay"]}]], epsilon=0.3, delta=0.2)
    calm = rich.predict(SessionMonitor(RuleSet([("never", "G !pay")])), {"labels": []}, 5)
    assert calm.known and calm.backed and 0 < calm.risk["never"] < 1


def test_a_state_never_seen_is_unknown_and_not_backed():
    rules = RuleSet(RULES)
    model = RiskModel.learn(Abstraction(rules), [[{"labels": ["ask"]}, {"labels": ["answer"]}]])
    monitor = SessionMonitor(rules)
    answer = model.predict(monitor, {"labels": ["approved"]}, 3)
    assert not answer.known and not answer.backed and answer.state is None
    assert answer.risk == {"approval": None, "reply": None, ANY_RULE: None}
    violating = model.predict(monitor, {"labels": ["pay"]}, 3)
    assert violating.risk["approval"] == 1.0 and violating.risk["reply"] is None


def test_an_unknown_rule_is_refused(model):
    with pytest.raises(ValueError, match="rule: 'refunds' is not in the model"):
        model.risks("refunds", 3)


def test_the_model_as_data(model):
    data = model.to_json()
    assert len(data["states"]) == len(model.states)
    sums = np.zeros(len(model.states))
    for i, _, p in data["transitions"]:
        sums[i] += p
    np.testing.assert_allclose(sums, 1.0)
    assert {s["kind"] for s in data["states"]} == {"start", "step", "end"}


# -- the model as stored --------------------------------------------------------------------------

ROUND_TRIP_RULES = [
    RULES,
    [("order", "!pay U approved"), ("once", "F answer"), ("never", "G !(pay & ask)")],
    [("again", "G(ask -> X answer)"), ("big", "G(data.amount > 100 -> O approved)")],
]

round_trip_sessions = st.lists(st.lists(st.fixed_dictionaries({
    "labels": st.lists(st.sampled_from(["pay", "approved", "ask", "answer", "other"]),
                       max_size=3, unique=True),
    "data": st.fixed_dictionaries({"amount": st.sampled_from([5, 150])})}),
    min_size=1, max_size=8), min_size=1, max_size=25)


def _same_matrix(a, b):
    assert a.shape == b.shape
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(range(len(ROUND_TRIP_RULES))), round_trip_sessions, st.booleans(),
       st.sampled_from([1.0, 0.5]), st.sampled_from([(0.05, 0.01), (0.3, 0.2)]), st.booleans())
def test_a_stored_model_answers_exactly_as_the_learned_one(which, sessions, narrow, alpha,
                                                           pac_parameters, compact):
    rules = RuleSet(ROUND_TRIP_RULES[which])
    readable = sorted(Abstraction(rules).readable)
    atoms = readable[: max(1, len(readable) // 2)] if narrow else None
    epsilon, delta = pac_parameters
    learned = RiskModel.learn(Abstraction(rules, atoms), sessions, alpha, epsilon, delta)
    stored = json.loads(json.dumps(learned.to_json(compact)))   # as a JSON column keeps it
    model = RiskModel.from_json(stored, RuleSet(ROUND_TRIP_RULES[which]))
    assert model.states == learned.states
    assert model.abstraction.picked == learned.abstraction.picked
    for name in ("matrix", "counts", "valid"):
        _same_matrix(getattr(model.chain, name), getattr(learned.chain, name))
    assert np.array_equal(model.chain.absorbing, learned.chain.absorbing)
    assert np.array_equal(model.enough, learned.enough)
    assert model.chain.invalid_observed == learned.chain.invalid_observed
    for rule in [*learned.unsafe]:
        assert np.array_equal(model.unsafe[rule], learned.unsafe[rule])
        for horizon in (None, 0, 1, 4):
            assert np.array_equal(model.risks(rule, horizon), learned.risks(rule, horizon))
            assert np.array_equal(model.unbacked(rule, horizon),
                                  learned.unbacked(rule, horizon))
    for state in learned.states:
        assert model.answer(state, 3) == learned.answer(state, 3)
    assert json.loads(json.dumps(model.to_json(compact))) == stored
    assert json.loads(json.dumps(model.to_json(not compact))) == json.loads(json.dumps(
        learned.to_json(not compact)))


def test_a_stored_model_is_refused_for_other_rules_or_another_format(model):
    data = model.to_json()
    with pytest.raises(ValueError, match="rules: the model was learned for approval, reply"):
        RiskModel.from_json(data, RuleSet([("approval", "G(pay -> O approved)")]))
    with pytest.raises(ValueError, match="format"):
        RiskModel.from_json({**data, "format": 99}, RuleSet(RULES))
    packed = model.to_json(compact=True)
    with pytest.raises(ValueError, match="does not fit the model's states"):
        short = base64.b64encode(zlib.compress(np.zeros(3, dtype="<i8").tobytes())).decode()
        RiskModel.from_json({**packed, "counts": {**packed["counts"], "indptr": short}},
                            RuleSet(RULES))
    with pytest.raises(ValueError, match="does not read"):
        RiskModel.from_json({**packed, "states": {"zlib": "not base64!"}}, RuleSet(RULES))


def simulate_behind_a_guard(model, start, rule, horizon, runs, rng):
    """The guarded reading by simulation, the way a guard treats an agent: draw the next state
    from the learned chain; a drawn step that violates any rule is refused and drawn again; a
    state whose every step is refused ends there (the guard stops), violating the rules those
    steps violate; absorbing states stay.  Counts runs that meet ``rule``'s unsafe states within
    ``horizon`` steps."""
    matrix = model.chain.matrix.toarray()
    kinds = [s.kind for s in model.states]
    rules = model.abstraction.rules
    column = None if rule == ANY_RULE else rules.index(rule)

    def bad(j, for_rule):
        violated = model.states[j].violated
        return any(violated) if for_rule is None else violated[for_rule]

    hits = 0
    for _ in range(runs):
        state, hit = start, bad(start, column)
        for _ in range(horizon):
            if hit:
                break
            row = matrix[state]
            allowed = [j for j in np.flatnonzero(row)
                       if not (kinds[j] == "step" and bad(j, None))]
            if not allowed:
                # Doomed: the guard can only stop; the rule is broken when a refused step of
                # it would have broken it.
                hit = any(bad(j, column) for j in np.flatnonzero(row))
                break
            weights = row[allowed] / row[allowed].sum()
            state = int(rng.choice(allowed, p=weights))
            hit = bad(state, column)
        hits += hit
    return hits / runs


def test_the_guarded_reading_is_what_an_agent_behind_a_guard_meets(model):
    rng = np.random.default_rng(5)
    for rule in ("approval", "reply", ANY_RULE):
        guarded = model.risks(rule, 3, guarded=True)
        for start in rng.choice(len(model.states), size=12, replace=False):
            simulated = simulate_behind_a_guard(model, int(start), rule, 3, 3000, rng)
            # 3000 runs: a standard error of at most 0.009.
            assert abs(guarded[start] - simulated) < 0.04, (rule, start)


def test_behind_a_guard_a_step_that_only_later_tempts_a_violation_is_safe():
    rules = RuleSet([("no_delete", "G !delete"), ("logged", "G(console -> F log)")])
    rng = random.Random(3)
    learned = [[{"labels": ["console"]}]
               + ([{"labels": ["delete"]}] if rng.random() < 0.8 else [{"labels": []}])
               + [{"labels": ["log"]}] for _ in range(300)]
    model = RiskModel.learn(Abstraction(rules), learned)
    monitor = SessionMonitor(rules)
    plain = model.predict(monitor, {"labels": ["console"]}, 2)
    behind = model.predict(monitor, {"labels": ["console"]}, 2, guarded=True)
    assert plain.risk["no_delete"] > 0.6          # the agent, left alone, deletes
    assert behind.risk["no_delete"] < 0.05        # the guard refuses the deletion at its step
    # (A guard may raise another rule's risk: the refused mass goes to the other steps.)
