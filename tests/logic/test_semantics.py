"""LTLf semantics: the finite-trace oracle on hand-made traces, and progression, the monitors and
``empty_value`` against the oracle on random formulas and traces.

Conventions (positions 0..n-1, n >= 1): X strong (false at the last step), WX weak, G vacuous at
the end, F and U false at the end, W and R weak; F[a,b] needs a real step in [i+a, i+b], G[a,b]
constrains only the steps of that window that exist; Y false and Z true at step 0.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from studio.logic import formula as fm
from studio.logic.finite import evaluate, holds
from studio.logic.formula import END, FALSE, MORE, TRUE, Atom, Formula, G, Not
from studio.logic.parser import parse
from studio.logic.progression import Progressor, final_verdict, nnf, progress_uncached
from studio.monitor import RuleError, RuleSet, SessionMonitor, compile_rule
from tests.logic.strategies import (
    events,
    formulas,
    is_monitorable,
    label_traces,
    labels_only,
    monitorable_formulas,
    to_trace,
)

SAT, VIOL = "satisfied", "violated"


def steps(*labels: str) -> list[dict]:
    """Events from space-separated label strings: ``steps("p q", "", "p")``."""
    return [{"labels": text.split()} for text in labels]


def data_steps(*xs) -> list[dict]:
    """Events with ``data.x`` (``None`` leaves it out) and no labels."""
    return [{"labels": [], "data": {} if x is None else {"x": x}} for x in xs]


def oracle(f: Formula | str, evts: list[dict]) -> bool:
    f = parse(f) if isinstance(f, str) else f
    return holds(f, to_trace([{"labels": e.get("labels", []), **e} for e in evts]))


def monitor_results(f: Formula, evts: list[dict]):
    """The monitor's result for the one rule after each event."""
    m = SessionMonitor(RuleSet([("r", f)]))
    out = []
    for e in evts:
        m.feed(e)
        out.append(m.results()[0])
    return out


def verdict(b: bool) -> str:
    return SAT if b else VIOL


# ---------------------------------------------------------------------------------------------
# The oracle on hand-made traces

HOLDS_CASES = [
    # atoms and booleans
    ("p", steps("p"), True),
    ("p", steps("", "p"), False),
    ("!p", steps("q"), True),
    ("p & q", steps("p q"), True),
    ("p & q", steps("p"), False),
    ("p | q", steps("q"), True),
    ("p -> q", steps(""), True),
    ("p -> q", steps("p"), False),
    ("p <-> q", steps(""), True),
    ("p <-> q", steps("q"), False),
    ("true", steps(""), True),
    ("false", steps("p"), False),
    # X is strong, WX weak
    ("X p", steps("p"), False),
    ("X p", steps("", "p"), True),
    ("X p", steps("p", ""), False),
    ("X true", steps("p"), False),
    ("X true", steps("", ""), True),
    ("!X p", steps("p"), True),
    ("WX p", steps("p"), True),
    ("WX p", steps(""), True),
    ("WX p", steps("", ""), False),
    ("WX p", steps("", "p"), True),
    ("WX false", steps(""), True),
    ("WX false", steps("", ""), False),
    ("X X p", steps("", "p"), False),
    ("X WX p", steps("", ""), True),
    ("WX X p", steps("", ""), False),
    ("WX X p", steps(""), True),
    # G vacuous at the end, F false at the end
    ("G p", steps("p", "p", "p"), True),
    ("G p", steps("p", "", "p"), False),
    ("G p", steps("p", "p", ""), False),
    ("F p", steps("", "", ""), False),
    ("F p", steps("", "", "p"), True),
    ("G F p", steps("p", "", "p"), True),
    ("G F p", steps("p", "p", ""), False),
    ("F G p", steps("", "", "p"), True),
    ("F G p", steps("p", "p", ""), False),
    ("G X true", steps("", "", ""), False),
    ("G WX false", steps(""), True),
    ("G WX false", steps("", ""), False),
    # U strong, W weak
    ("p U q", steps("p", "p", "p"), False),
    ("p U q", steps("p", "p", "q"), True),
    ("p U q", steps("q"), True),
    ("p U q", steps("p", "", "q"), False),
    ("p W q", steps("p", "p", "p"), True),
    ("p W q", steps("p", "", "q"), False),
    ("p W q", steps("p", "q"), True),
    ("p W q", steps("", "p"), False),
    # R: q holds up to and including the first p, or throughout
    ("p R q", steps("q", "q"), True),
    ("p R q", steps("q", "p q", ""), True),
    ("p R q", steps("q", "p", ""), False),
    ("p R q", steps("q", "", "q"), False),
    ("p R q", steps("p q"), True),
    ("false R q", steps("q", "q"), True),
    # bounded: F needs a real step in the window, G constrains only the steps that exist
    ("F[1,2] p", steps("p", "", ""), False),
    ("F[1,2] p", steps("", "", "p"), True),
    ("F[1,2] p", steps("", "p"), True),
    ("F[1,2] p", steps("", "", "", "p"), False),
    ("F[1,2] p", steps("p"), False),
    ("F[1,1] true", steps(""), False),
    ("F[1,1] true", steps("", ""), True),
    ("F[0,1] G q", steps(""), False),
    ("F[0,1] G q", steps("q"), True),
    ("F[0,1] G q", steps("", "q"), True),
    ("F[0,1] G q", steps("", "q", ""), False),
    ("G[0,1] p", steps("p"), True),
    ("G[0,1] p", steps(""), False),
    ("G[0,1] p", steps("p", ""), False),
    ("G[0,1] p", steps("p", "p", ""), True),
    ("G[1,2] p", steps(""), True),
    ("G[1,2] p", steps("", "p"), True),
    ("G[1,2] p", steps("", "p", ""), False),
    ("G[1,2] p", steps("", "p", "p", ""), True),
    ("G[1,1] false", steps(""), True),
    ("G[1,1] false", steps("", ""), False),
    ("G[2,3] false", steps("", ""), True),
    ("G(p -> F[1,2] q)", steps("p", "", "q", "p", "q"), True),
    ("G(p -> F[1,2] q)", steps("p", "", "", "q"), False),
    ("G(p -> F[1,2] q)", steps("", "", "p"), False),
    ("G(p -> G[1,2] q)", steps("", "", "p"), True),
    ("G(p -> G[1,2] q)", steps("p", "q", ""), False),
    # past, read at position 0 directly or from the future
    ("Y p", steps("p"), False),
    ("Z p", steps(""), True),
    ("Y true", steps("p"), False),
    ("Z false", steps(""), True),
    ("!Y p", steps("p"), True),
    ("O p", steps("p"), True),
    ("H p", steps(""), False),
    ("p S q", steps("q"), True),
    ("p S q", steps("p"), False),
    ("X Y p", steps("p", ""), True),
    ("X Y p", steps("", "p"), False),
    ("X Z p", steps("", "p"), False),
    ("G(q -> Y p)", steps("p", "q", ""), True),
    ("G(q -> Y p)", steps("q", "", ""), False),
    ("G(q -> Z p)", steps("q", "", ""), True),
    ("G(q -> Z p)", steps("", "q"), False),
    ("F(q & O p)", steps("", "p", "", "q"), True),
    ("F(q & O p)", steps("q", "", "p"), False),
    ("G(q -> H p)", steps("p", "p q", "q"), False),
    ("G(q -> H p)", steps("p", "p q", "p"), True),
    ("F(r & (p S q))", steps("q", "p", "p r"), True),
    ("F(r & (p S q))", steps("q", "", "p r"), False),
    ("F(r & (p S q))", steps("", "p", "p r"), False),
    ("G(r -> (p S q))", steps("p q r", "p r", "r"), False),
]


@pytest.mark.parametrize("text,evts,expected", HOLDS_CASES,
                         ids=[f"{c[0]}@{len(c[1])}" for c in HOLDS_CASES])
def test_oracle_on_hand_made_traces(text, evts, expected):
    assert oracle(text, evts) is expected


POSITION_CASES = [
    # formula, labels per step, truth at every position
    ("X p", ("", "p", "p"), [True, True, False]),
    ("WX p", ("", "p", ""), [True, False, True]),
    ("F p", ("", "p", ""), [True, True, False]),
    ("G p", ("", "p", "p"), [False, True, True]),
    ("p U q", ("p", "q", "p"), [True, True, False]),
    ("p W q", ("p", "q", "p"), [True, True, True]),
    ("p R q", ("q", "p q", "q"), [True, True, True]),
    ("p R q", ("q", "p", "q"), [False, False, True]),
    ("F[1,2] p", ("", "", "p", ""), [True, True, False, False]),
    ("G[1,2] p", ("", "", "p", ""), [False, False, False, True]),
    ("Y p", ("p", "", "p"), [False, True, False]),
    ("Z p", ("p", "", "p"), [True, True, False]),
    ("O p", ("", "p", ""), [False, True, True]),
    ("H p", ("p", "p", ""), [True, True, False]),
    ("p S q", ("", "q", "p", "p", ""), [False, True, True, True, False]),
    ("p S q", ("q", "", "p"), [True, False, False]),
    ("p S q", ("p q", "p", "p"), [True, True, True]),
    ("Y Y p", ("p", "", ""), [False, False, True]),
    ("Z Y p", ("p", "", ""), [True, False, True]),
    ("H O p", ("", "p", ""), [False, False, False]),
    ("O H p", ("p", "", ""), [True, True, True]),
]


@pytest.mark.parametrize("text,labels,expected", POSITION_CASES,
                         ids=[f"{c[0]}@{'/'.join(c[1])}" for c in POSITION_CASES])
def test_oracle_truth_at_every_position(text, labels, expected):
    assert evaluate(parse(text), to_trace(steps(*labels))) == expected


DATA_CASES = [
    ("data.x > 2", data_steps(3), True),
    ("data.x > 2", data_steps(2), False),
    ("data.x > 2", data_steps(None), False),          # a missing path is false
    ("!(data.x > 2)", data_steps(None), True),
    ("data.x != 1", data_steps(None), False),         # ... even under !=
    ("data.x == \"1\"", data_steps(1), False),        # kinds never mix
    ("data.x != \"1\"", data_steps(1), True),
    ("data.x < \"a\"", data_steps(1), False),
    ("data.x == 1.0", data_steps(1), True),
    ("data.x == prev(data.x)", data_steps(1), False),  # no previous event at step 0
    ("data.x != prev(data.x)", data_steps(1), False),
    ("X (data.x == prev(data.x))", data_steps(1, 1), True),
    ("X (data.x == prev(data.x))", data_steps(1, 2), False),
    ("X (prev(data.x) < data.x)", data_steps(1, 2), True),
    ("X (prev(data.x) < data.x)", data_steps(None, 2), False),
    ("G(data.x == prev(data.x))", data_steps(1, 1), False),
    ("WX G(data.x == prev(data.x))", data_steps(1, 1, 1), True),
    ("WX G(data.x == prev(data.x))", data_steps(1, 1, 2), False),
    ("F(data.x > 2 & Y(data.x > 2))", data_steps(3, 1, 3, 4), True),
    ("F(data.x > 2 & Y(data.x > 2))", data_steps(3, 1, 3, 1), False),
    ("G(data.x > 2 -> O(data.x == 0))", data_steps(3, 0, 4), False),
    ("G(data.x > 2 -> O(data.x == 0))", data_steps(0, 3, 4), True),
]


@pytest.mark.parametrize("text,evts,expected", DATA_CASES,
                         ids=[f"{c[0]}@{len(c[1])}" for c in DATA_CASES])
def test_oracle_on_data_atoms(text, evts, expected):
    assert oracle(text, evts) is expected


def test_oracle_rejects_the_empty_trace():
    with pytest.raises(ValueError):
        evaluate(Atom("p"), [])


# ---------------------------------------------------------------------------------------------
# Regressions: `p | !p` must not simplify to true (both literals fail when a strong next meets
# the end of the session).

REGRESSION_CASES = [
    pytest.param("X p | X !p", steps("p"), False, id="X p | X !p@1"),
    pytest.param("X p | X !p", steps(""), False, id="X p | X !p@1b"),
    pytest.param("G(X p | X !p)", steps("", "", ""), False,
                 id="G(X p | X !p)@3"),
    pytest.param("X (data.x > 2) | X !(data.x > 2)", data_steps(3), False, id="X cmp | X !cmp@1"),
    pytest.param("X Y p | X !Y p", steps("p"), False,
                 id="X Y p | X !Y p@1"),
    pytest.param("X X q | X X !q", steps("", ""), False,
                 id="X X q | X X !q@2"),
    pytest.param("X p | X !p", steps("", ""), True, id="X p | X !p@2"),
]


@pytest.mark.parametrize(
    "text,evts,expected",
    [pytest.param(*c, id=f"{c[0]}@{len(c[1])}") for c in HOLDS_CASES + DATA_CASES]
    + REGRESSION_CASES)
def test_monitor_final_verdict_on_hand_made_traces(text, evts, expected):
    assert oracle(text, evts) is expected
    assert monitor_results(parse(text), evts)[-1].final == verdict(expected)


def test_trac_does_not_declare_satisfied_what_a_shorter_session_violates():
    # TRAC says "satisfied" after step 0, yet the session that ends there violates the rule.
    (result,) = monitor_results(parse("X p | X !p"), steps("p"))
    assert result.verdict == "pending"


def test_instance_level_reports_the_obligation_that_fails_at_the_end():
    # G(X p | X !p): the obligation opened at the last step needs a next step, so it fails.
    (*_, result) = monitor_results(parse("G(X p | X !p)"), steps("", ""))
    assert [(v.trigger, v.detected) for v in result.violations] == [(1, 1)]


def test_monitor_refuses_future_operators_inside_past_ones():
    with pytest.raises(RuleError):
        compile_rule("r", parse("G(q -> O X p)"))
    with pytest.raises(RuleError):
        RuleSet([("r", parse("H(p U q)"))])


# ---------------------------------------------------------------------------------------------
# NNF

def _is_nnf(f: Formula) -> bool:
    """No implications or equivalences, negation on leaves only (past subformulas are leaves:
    their insides are evaluated as they are, not normalised)."""
    if f.is_leaf or f.op in ("true", "false"):
        return True
    if f.op in ("implies", "iff"):
        return False
    if f.op == "not":
        return f.args[0].is_leaf
    return all(_is_nnf(a) for a in f.args)


@settings(max_examples=200, deadline=None)
@given(f=formulas(), evts=events())
def test_nnf_is_equivalent_at_every_position(f, evts):
    trace = to_trace(evts)
    normal = nnf(f)
    assert _is_nnf(normal)
    assert evaluate(normal, trace) == evaluate(f, trace)
    negated = nnf(Not(f))
    assert _is_nnf(negated)
    assert evaluate(negated, trace) == [not v for v in evaluate(f, trace)]


@settings(max_examples=100, deadline=None)
@given(f=formulas())
def test_nnf_is_idempotent_and_keeps_past_subformulas_whole(f):
    normal = nnf(f)
    assert nnf(normal) is normal
    # Past subformulas are leaves of the normal form: the same objects as in the input.
    past_in = {g for g in f.subformulas() if g.is_past}
    past_out = {g for g in normal.subformulas() if g.is_past}
    assert past_out <= past_in


# ---------------------------------------------------------------------------------------------
# The monitor against the oracle

@settings(max_examples=250, deadline=None)
@given(f=monitorable_formulas(), sessions=st.lists(events(), min_size=1, max_size=3))
@example(f=parse("G[0,1] p"), sessions=[steps("p")])
@example(f=parse("F[0,1] G q"), sessions=[steps("")])
@example(f=parse("G(q -> Y p) & F(data.x == prev(data.x))"),
         sessions=[[{"labels": ["p"], "data": {"x": 1}}, {"labels": ["q"], "data": {"x": 1}}]])
def test_monitor_final_verdict_matches_the_oracle_after_every_step(f, sessions):
    # Several sessions through one rule set: they share (and so test) the lazy automaton's rows.
    ruleset = RuleSet([("r", f)])
    for evts in sessions:
        trace = to_trace(evts)
        m = SessionMonitor(ruleset)
        for k, event in enumerate(evts):
            m.feed(event)
            expected = holds(f, trace[:k + 1])
            assert m.results()[0].final == verdict(expected), (k, evts[:k + 1])


def _small_formulas() -> list[Formula]:
    """Every one- and two-operator chain over the literals of p, and every conjunction and
    disjunction of two one-operator terms: where residuals of different operators meet."""
    p = Atom("p")
    literals = [p, Not(p)]
    unary = [lambda f: f, fm.X, fm.WX, fm.F, G,
             lambda f: fm.FBounded(0, 1, f), lambda f: fm.FBounded(1, 1, f),
             lambda f: fm.FBounded(1, 2, f), lambda f: fm.GBounded(0, 1, f),
             lambda f: fm.GBounded(1, 1, f), lambda f: fm.GBounded(1, 2, f),
             fm.Y, fm.Z, fm.O, fm.H]
    terms = {t(lit) for t in unary for lit in literals}
    terms |= {op(a, b) for op in (fm.U, fm.W, fm.R, fm.S) for a in literals for b in literals}
    found = {t1(t2(lit)) for t1 in unary for t2 in unary for lit in literals}
    found |= {op(a, b) for a in terms for b in terms for op in (fm.And, fm.Or)}
    return sorted((f for f in found if is_monitorable(f)), key=lambda f: f.text)


def test_monitor_matches_the_oracle_on_all_small_formulas_and_short_traces():
    """Exhaustive where random search is thin: ~1900 formulas, every trace of 4 steps over p,
    the final verdict after every step."""
    traces = [[{"labels": ["p"] if bit else []} for bit in bits]
              for bits in itertools.product((False, True), repeat=4)]
    mismatches = []
    for f in _small_formulas():
        ruleset = RuleSet([("r", f)])
        truth: dict[tuple, bool] = {}   # per prefix: the traces share them
        for evts in traces:
            trace = to_trace(evts)
            m = SessionMonitor(ruleset)
            for k, event in enumerate(evts):
                m.feed(event)
                key = tuple(labels for labels, _ in trace[:k + 1])
                if key not in truth:
                    truth[key] = holds(f, trace[:k + 1])
                if m.results()[0].final != verdict(truth[key]):
                    mismatches.append((f.text, [e["labels"] for e in evts[:k + 1]]))
                    break
    assert mismatches == []


@settings(max_examples=250, deadline=None)
@given(f=monitorable_formulas(), evts=events())
def test_trac_verdicts_are_sound_and_final(f, evts):
    trace = to_trace(evts)
    truths = [holds(f, trace[:k + 1]) for k in range(len(evts))]
    results = monitor_results(f, evts)
    decided_at = None
    for k, result in enumerate(results):
        if decided_at is not None:
            # Once reached, a verdict never changes (nor does the step it was reached at).
            assert result.verdict == results[decided_at].verdict
            assert result.first_verdict_step == decided_at
            continue
        if result.verdict == "pending":
            assert result.first_verdict_step is None
            continue
        decided_at = k
        assert result.first_verdict_step == k   # `true` and `false` are decided at step 0
        expected = result.verdict == SAT
        assert result.residual is (TRUE if expected else FALSE)
        # Sound: the session satisfies (violates) the rule however it goes on from here - here
        # we can only check the continuations the trace actually takes.
        assert all(truth is expected for truth in truths[k:]), (k, truths)


@settings(max_examples=200, deadline=None)
@given(body=monitorable_formulas(4), evts=events())
def test_instance_level_violations_are_exactly_the_failing_obligations(body, evts):
    rule = compile_rule("r", G(body))
    assume(rule.instance_level)
    trace = to_trace(evts)
    truth = evaluate(rule.body, trace)
    results = monitor_results(rule.formula, evts)
    violations = results[-1].violations
    assert sorted(v.trigger for v in violations) == [i for i, t in enumerate(truth) if not t]
    n = len(evts)
    for v in violations:
        assert v.trigger <= v.detected <= n - 1
        if v.at_end:
            assert v.detected == n - 1
        else:
            # Detected at step d: the obligation fails on every prefix that reaches d.
            for j in range(v.detected, n):
                assert not evaluate(rule.body, trace[:j + 1])[v.trigger]


# ---------------------------------------------------------------------------------------------
# Progression itself, on propositional future formulas and with leaf values from the oracle

@settings(max_examples=200, deadline=None)
@given(f=formulas(past=False, data=False), label_sets=label_traces(min_size=2))
def test_progression_one_step_lemma(f, label_sets):
    """f holds on t iff the residual after t[0] holds on t[1:] (non-empty rests only: where
    the session ends is empty_value's business, tested below)."""
    trace = labels_only(label_sets)
    expected = holds(f, trace)
    residual = nnf(f)
    for k in range(len(trace) - 1):
        residual = progress_uncached(residual, trace[k][0])
        if residual is TRUE or residual is FALSE:
            assert expected is (residual is TRUE), k
            return
        assert holds(residual, trace[k + 1:]) is expected, (k, residual)


def _leaf_labels(normal: Formula, trace) -> list[frozenset]:
    """Per step: the atom names true there plus the data-atom and past nodes (the leaves that
    progression reads) that the oracle says are true there."""
    nodes = [a for a in normal.atoms if not isinstance(a, str)]
    columns = {node: evaluate(node, trace) for node in nodes}
    return [frozenset(labels).union(n for n in nodes if columns[n][i])
            for i, (labels, _event) in enumerate(trace)]


@settings(max_examples=200, deadline=None)
@given(f=formulas(), evts=events())
@example(f=parse("G[0,1] p"), evts=steps("p"))
@example(f=parse("F[1,1] true"), evts=steps(""))
def test_empty_value_is_the_ltlf_verdict_when_the_session_ends(f, evts):
    """Progress nnf(f) over the whole trace (past and data leaves valued by the oracle, so
    past operators may contain future ones here) and read the residual on the empty rest."""
    trace = to_trace(evts)
    normal = nnf(f)
    residual = normal
    for labels in _leaf_labels(normal, trace):
        residual = progress_uncached(residual, labels)
    assert final_verdict(residual) is residual.empty_value
    assert residual.empty_value is holds(f, trace), residual


@settings(max_examples=100, deadline=None)
@given(f=formulas(), evts=events(), noise=st.frozensets(st.sampled_from(["s", "t", "p"])))
def test_progressor_memo_returns_what_uncached_progression_returns(f, evts, noise):
    progressor = Progressor()
    trace = to_trace(evts)
    normal = nnf(f)
    residual = normal
    for labels in _leaf_labels(normal, trace):
        expected = progress_uncached(residual, labels)
        assert progressor(residual, labels) is expected
        # Labels the residual does not read leave the memo key unchanged: a hit.
        hits = progressor.hits
        noisy = labels | noise
        assert progressor(residual, noisy) is progress_uncached(residual, noisy)
        if residual is not TRUE and residual is not FALSE and residual.atoms.isdisjoint(noise):
            assert progressor.hits == hits + 1
        residual = expected


def test_progressor_memo_keys_on_relevant_labels_only():
    progressor = Progressor()
    f = nnf(parse("G(p -> F q)"))
    first = progressor(f, frozenset({"p"}))
    assert progressor.misses == 1
    assert progressor(f, frozenset({"p", "zzz"})) is first
    assert (progressor.hits, progressor.misses) == (1, 1)
    assert progressor(f, frozenset({"q"})) is progress_uncached(f, frozenset({"q"}))
    assert progressor.misses == 2


def test_progressor_limit_clears_the_table_without_changing_results():
    progressor = Progressor(limit=2)
    f = nnf(parse("G(p -> X q) & F r"))
    label_sets = [frozenset(s) for s in ({"p"}, {"q"}, {"r"}, {"p", "q"}, set(), {"p", "r"})]
    for labels in label_sets * 2:
        assert progressor(f, labels) is progress_uncached(f, labels)
    assert len(progressor._memo) <= 2


def test_strong_and_weak_next_residuals_carry_the_end_of_the_session():
    p = Atom("p")
    # X p leaves p (false on the empty rest); X of a formula true on the empty rest must also
    # require a next step, WX of one false on the empty rest must also accept the end.
    assert progress_uncached(nnf(parse("X p")), frozenset()) is p
    assert progress_uncached(nnf(parse("X G p")), frozenset()).empty_value is False
    assert progress_uncached(nnf(parse("WX p")), frozenset()).empty_value is True
    assert progress_uncached(nnf(parse("WX G p")), frozenset()).empty_value is True
    assert MORE.empty_value is False and END.empty_value is True
    assert progress_uncached(MORE, frozenset()) is TRUE
    assert progress_uncached(END, frozenset()) is FALSE


def test_progression_rejects_formulas_not_in_normal_form():
    with pytest.raises(ValueError):
        progress_uncached(parse("p -> q"), frozenset())


@pytest.mark.parametrize("text,expected", [
    ("true", True), ("false", False), ("p", False), ("!p", False), ("X p", False),
    ("WX p", True), ("F p", False), ("G p", True), ("p U q", False), ("p W q", True),
    ("p R q", True), ("F[1,2] p", False), ("G[1,2] p", True), ("G p & F q", False),
    ("G p | F q", True), ("data.x > 2", False), ("Y p", False), ("Z p", False),
])
def test_empty_value_of_residual_shapes(text, expected):
    assert nnf(parse(text)).empty_value is expected
