"""Review aids (studio.logic.review): shortest example traces, distinguishing traces, warnings and
English, checked against the independent finite-trace oracle (studio.logic.finite).

Traces are lists of label sets; the oracle reads them as ``[(labels, None), ...]`` of the
formula's propositional abstraction (data atoms become atoms named by their text).
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.logic import formula as fm
from studio.logic import review, wording
from studio.logic.finite import holds
from studio.logic.formula import Formula
from studio.logic.parser import parse
from studio.logic.progression import nnf
from studio.logic.review import (
    MAX_ATOMS,
    ReviewLimitError,
    distinguishing_trace,
    equivalent,
    find_distinguishing_trace,
    find_trace,
    propositional_abstraction,
    shortest_trace,
    warnings,
)
from studio.logic.wording import explain
from tests.logic.strategies import formulas, is_monitorable

REPO_ROOT = Path(__file__).resolve().parents[2]


def as_formula(f: Formula | str) -> Formula:
    return parse(f) if isinstance(f, str) else f


def oracle(f: Formula | str, trace) -> bool:
    """The LTLf verdict of a non-empty trace of label sets."""
    return holds(propositional_abstraction(as_formula(f)), [(frozenset(s), None) for s in trace])


def names_of(*fs: Formula) -> list[str]:
    return sorted({g.name for f in fs for g in propositional_abstraction(f).subformulas()
                   if g.op == "atom"})


def all_traces(names, max_length: int, min_length: int = 1):
    letters = [frozenset(c) for k in range(len(names) + 1)
               for c in itertools.combinations(names, k)]
    for n in range(min_length, max_length + 1):
        yield from (list(t) for t in itertools.product(letters, repeat=n))


def steps(*texts: str) -> list[frozenset]:
    """Traces from space-separated label strings: ``steps("p q", "", "p")``."""
    return [frozenset(t.split()) for t in texts]


# ---------------------------------------------------------------------------------------------
# Known equivalences and non-equivalences of LTLf

EQUIVALENT = [
    ("F p", "true U p"),
    ("G p", "!F !p"),
    ("p W q", "(p U q) | G p"),
    ("!(p U q)", "!q W (!p & !q)"),
    ("!(p U q)", "!p R !q"),
    ("p R q", "!(!p U !q)"),
    ("p R q", "q W (p & q)"),
    # In LTLf the dual of the strong next is the weak one.
    ("!X p", "WX !p"),
    ("!WX p", "X !p"),
    ("X (p & q)", "X p & X q"),
    ("X (p | q)", "X p | X q"),
    ("WX (p | q)", "WX p | WX q"),
    ("F p", "p | X F p"),
    ("G p", "p & WX G p"),
    ("p U q", "q | (p & X (p U q))"),
    ("p W q", "q | (p & WX (p W q))"),
    # On finite traces both say "p at the last step".
    ("G F p", "F G p"),
    ("G F p", "F (p & WX false)"),
    ("F[1,2] p", "X (p | X p)"),
    ("G[1,2] p", "WX (p & WX p)"),
    ("F[0,2] p", "p | X p | X X p"),
    # Read at the first step, past operators see only that step.
    ("O p", "p"),
    ("H p", "p"),
    ("Y p", "false"),
    ("Z p", "true"),
    ("G (O p <-> p | Y O p)", "true"),
    ("G (H p <-> p & Z H p)", "true"),
    ("G (p S q <-> q | (p & Y (p S q)))", "true"),
    ("G (q -> O p)", "G (q -> O p) & (p | !q)"),
]

# (a, b, the length of a shortest distinguishing trace)
DIFFERENT = [
    ("X p", "WX p", 1),
    ("!X p", "X !p", 1),
    ("p U q", "p W q", 1),
    ("G (p -> F q)", "G (p -> X F q)", 1),
    ("F p", "G F p", 2),
    ("X X p", "X WX p", 2),
    ("G (q -> O p)", "G (q -> p)", 2),
    ("G (q -> Y p)", "G (q -> Z p)", 1),
    ("F[0,3] p", "F[0,2] p", 4),
    ("G[0,3] p", "G[0,2] p", 4),
    ("(p U q) U r", "p U (q U r)", 2),
    ("G (p -> F[1,2] q)", "G (p -> F[1,3] q)", 4),
    ("x > 5", "x > 3 | x > 5", 1),  # x = 4
    # The data abstraction: no real x tells these apart, the abstraction does.
    ("x > 5", "x > 5 & x > 3", 1),
]


@pytest.mark.parametrize(("a", "b"), EQUIVALENT)
def test_known_equivalences(a, b):
    result = find_distinguishing_trace(a, b)
    assert result.trace is None
    assert result.exhaustive and result.stopped == "exhausted", result.message
    assert equivalent(a, b)
    # ... and they really are equivalent in LTLf, on every trace of up to four steps.
    for trace in all_traces(names_of(parse(a), parse(b)), 4):
        assert oracle(a, trace) == oracle(b, trace), trace


@pytest.mark.parametrize(("a", "b", "length"), DIFFERENT)
def test_known_differences_have_shortest_witnesses(a, b, length):
    result = find_distinguishing_trace(a, b)
    assert result.exhaustive and result.stopped == "found"
    trace = result.trace
    assert len(trace) == length
    assert oracle(a, trace) != oracle(b, trace)
    assert not equivalent(a, b)
    assert distinguishing_trace(b, a) is not None
    for shorter in all_traces(names_of(parse(a), parse(b)), length - 1):
        assert oracle(a, shorter) == oracle(b, shorter), shorter


def test_witnesses_use_the_fewest_labels_first():
    assert distinguishing_trace("X p", "WX p") == [frozenset()]
    assert distinguishing_trace("p U q", "p W q") == steps("p")
    assert distinguishing_trace("F p", "G F p") == steps("p", "")
    assert distinguishing_trace("x > 5", "x > 3 | x > 5") == [frozenset({"x > 3"})]
    # Impossible for a real x (x > 5 without x > 3): the abstraction's price.
    assert distinguishing_trace("x > 5", "x > 5 & x > 3") == [frozenset({"x > 5"})]
    assert shortest_trace("G (p -> X q)", True) == [frozenset()]
    assert shortest_trace("G (p -> X q)", False) == steps("p")
    assert shortest_trace("F (p & X q)", True) == steps("p", "q")


def test_the_empty_trace_only_on_request():
    # LTLf traces are non-empty: G false (the trace has ended) has no model ...
    result = find_trace("G false", True)
    assert result.trace is None and result.exhaustive
    # ... but a session without events satisfies it, which the monitor reports.
    assert shortest_trace("G false", True, allow_empty=True) == []
    assert shortest_trace("F p", False, allow_empty=True) == []
    assert distinguishing_trace("G p", "G p & G false", allow_empty=True) == steps("p")
    assert distinguishing_trace("F p", "G p", allow_empty=True) == []


def test_the_length_bound_is_reported():
    short = find_distinguishing_trace("F[0,20] p", "F[0,19] p", max_length=10)
    assert short.trace is None
    assert not short.exhaustive and short.stopped == "length_bound"
    assert "10 steps" in short.message
    assert equivalent("F[0,20] p", "F[0,19] p", max_length=10)
    long = find_distinguishing_trace("F[0,20] p", "F[0,19] p", max_length=25)
    assert len(long.trace) == 21 and long.trace[-1] == frozenset({"p"})
    assert not any(long.trace[:-1])


def test_the_state_cap_is_reported():
    result = find_distinguishing_trace("G (p -> F[0,6] q)", "G (p -> F[0,7] q)", state_cap=5)
    assert result.trace is None
    assert not result.exhaustive and result.stopped == "state_cap"
    assert "budget" in result.message


def test_too_many_atoms_are_refused():
    many = " | ".join(f"a{i}" for i in range(MAX_ATOMS + 1))
    with pytest.raises(ReviewLimitError, match="13 atoms"):
        shortest_trace(f"G ({many})", True)
    with pytest.raises(ReviewLimitError):
        distinguishing_trace(many, "a0")
    # Twelve are fine (and fast: the states read few of them at a time).
    twelve = " | ".join(f"a{i}" for i in range(MAX_ATOMS))
    assert shortest_trace(f"G ({twelve})", False) == [frozenset()]


def test_past_operators_over_future_ones_fall_back_to_enumeration():
    result = find_distinguishing_trace("X O (X p)", "X X p")
    assert result.method == "enumeration"
    assert result.trace == steps("", "p")
    unknown = find_distinguishing_trace("H (F p)", "F p")  # equal at the first step
    assert unknown.trace is None and unknown.method == "enumeration"
    assert not unknown.exhaustive and unknown.searched_length >= 4
    assert "enumeration" in unknown.message


def test_past_memory_is_part_of_the_state():
    # After "q" the two residuals are the same, but only the memory knows whether p was seen.
    assert distinguishing_trace("G (q -> O p)", "G (q -> p)") == steps("p", "q")
    assert shortest_trace("G (r -> Y (p S q))", False) == steps("r")
    assert shortest_trace("F (r & Y (p S q))", True) == steps("q", "r")
    assert shortest_trace("F (r & Y Y H p)", True) == steps("p", "", "r")  # H p at step 0


def test_propositional_abstraction_names_data_atoms_by_their_text():
    f = parse('G (output.tool == "send_money" -> data.amount < prev(data.amount))')
    abstract = propositional_abstraction(f)
    assert {g.name for g in abstract.subformulas() if g.op == "atom"} == {
        'output.tool == "send_money"', "data.amount < prev(data.amount)"}
    assert shortest_trace(f, False) == [frozenset({'output.tool == "send_money"'})]


# ---------------------------------------------------------------------------------------------
# Properties against the oracle

PROPOSITIONAL = formulas(4, data=False)
SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def short_enumeration():
    """Past operators over future ones are searched by enumerating traces with the oracle; keep
    that short here (the tests only compare with traces of up to three steps)."""
    return mock.patch.object(review, "ENUMERATION_CAP", 600)


def check_shortest(f: Formula, satisfying: bool, exhaustive_length: int = 3) -> None:
    with short_enumeration():
        result = find_trace(f, satisfying)
    names = names_of(f)
    if result.trace is not None:
        assert result.exhaustive
        assert oracle(f, result.trace) == satisfying
        assert set().union(*result.trace) <= set(names)
        shorter_bound = min(len(result.trace) - 1, exhaustive_length)
        for shorter in all_traces(names, shorter_bound):
            assert oracle(f, shorter) != satisfying, shorter
    else:
        bound = exhaustive_length if result.exhaustive else min(exhaustive_length,
                                                                result.searched_length)
        for trace in all_traces(names, bound):
            assert oracle(f, trace) != satisfying, trace


@SETTINGS
@given(PROPOSITIONAL, st.booleans())
def test_shortest_traces_are_right_and_shortest(f, satisfying):
    check_shortest(f, satisfying)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(formulas(3, data=True), st.booleans())
def test_shortest_traces_with_data_atoms(f, satisfying):
    check_shortest(f, satisfying, exhaustive_length=1)


def pairs():
    """Pairs that are often equivalent, or nearly: independent formulas differ at once."""
    f = PROPOSITIONAL
    return st.one_of(
        st.tuples(f, f),
        f.map(lambda a: (a, nnf(a))),                       # equivalent on non-empty traces
        st.tuples(f, f).map(lambda ab: (ab[0], fm.Or(ab[0], ab[1]))),
        st.tuples(f, f).map(lambda ab: (ab[0], fm.And(ab[0], ab[1]))),
        f.map(lambda a: (fm.G(fm.F(a)), fm.F(fm.G(a)))),
        f.map(lambda a: (fm.X(a), fm.Not(fm.WX(fm.Not(a))))),
        f.map(lambda a: (fm.WX(a), fm.X(a))),
    )


@SETTINGS
@given(pairs())
def test_distinguishing_traces_against_the_oracle(pair):
    a, b = pair
    with short_enumeration():
        result = find_distinguishing_trace(a, b)
    names = names_of(a, b)
    if result.trace is not None:
        assert result.exhaustive
        assert oracle(a, result.trace) != oracle(b, result.trace)
        for shorter in all_traces(names, min(len(result.trace) - 1, 3)):
            assert oracle(a, shorter) == oracle(b, shorter), shorter
    else:
        bound = 3 if result.exhaustive else min(3, result.searched_length)
        for trace in all_traces(names, bound):
            assert oracle(a, trace) == oracle(b, trace), trace
    if is_monitorable(a) and is_monitorable(b):
        assert result.method == "progression"


@settings(max_examples=60, deadline=None)
@given(PROPOSITIONAL)
def test_nnf_is_equivalent_on_non_empty_traces(f):
    with short_enumeration():
        result = find_distinguishing_trace(f, nnf(f))
    assert result.trace is None


def test_growing_residuals_still_exhaust():
    # Plain progression grows this residual by one disjunction per step, for ever (a | (b &
    # (a | (b & ...)))); the search's absorption keeps the state space finite.
    a = parse("G false W F WX r")
    b = parse("G false W F WX r | G !O !p W F WX r")
    result = find_distinguishing_trace(a, b, max_length=40)
    assert result.trace is None and result.exhaustive


@settings(max_examples=150, deadline=None)
@given(PROPOSITIONAL)
def test_absorption_keeps_the_meaning(f):
    residual = nnf(f)
    absorbed = review._absorb(residual)
    assert absorbed.size <= residual.size
    assert absorbed.empty_value == residual.empty_value
    for trace in all_traces(names_of(residual), 3):
        assert oracle(absorbed, trace) == oracle(residual, trace), trace


def test_zero_length_searches_decide_nothing():
    result = find_trace("true", True, max_length=0)
    assert result.trace is None and not result.exhaustive
    assert find_trace("G false", True, max_length=0, allow_empty=True).trace == []


# ---------------------------------------------------------------------------------------------
# Warnings

def kinds(f: str) -> list[str]:
    return [w.kind for w in warnings(f)]


@pytest.mark.parametrize(("f", "expected"), [
    ("G (p -> F q)", []),
    ("p & !p", ["unsatisfiable"]),
    ("F p & G !p", ["unsatisfiable"]),
    ("X false", ["unsatisfiable"]),
    ("G false", ["unsatisfiable"]),          # no non-empty trace has ended at its first step
    ("p | !p", ["valid"]),
    ("G p | F !p", ["valid"]),
    ("X p | WX !p", ["valid"]),
    ("WX true", ["valid"]),
    ("G (p & q -> F r) & G !(p & q)", ["vacuous"]),
    ("G (p -> q) & G (q -> !p)", ["vacuous"]),
    ("G !paid & (!ship W paid)", ["vacuous"]),
    ("G !grant & G (req -> (grant U done))", ["vacuous"]),
    # p can hold nowhere: X q and X !q cannot both hold, not even at the last step.
    ("G (p -> X q) & G (p -> X !q)", ["vacuous"]),
    ("G (p -> WX q) & G (p -> WX !q)", []),  # p may hold at the last step
    # (a & !a) simplifies to false, so the rule is the formula true: valid.
    ("G ((a & !a) -> F b)", ["valid"]),
    # The trigger needs a step after the last one: never true, and the rule holds always.
    ("G ((a & X false) -> F b)", ["valid", "vacuous"]),
])
def test_warnings(f, expected):
    assert kinds(f) == expected


def test_warning_messages_name_the_trigger():
    (w,) = warnings("G (p & q -> F r) & G !(p & q)")
    assert w.kind == "vacuous" and w.exact and w.trigger == "p & q"
    assert "`p & q`" in w.message and "condition" in w.message
    (w,) = warnings("G !paid & (!ship W paid)")
    assert w.trigger == "paid" and "G !ship" in w.message
    (w,) = warnings("p & !p")
    assert "No trace satisfies" in w.message


def test_bounded_warnings_say_so():
    (w,) = warnings("F[0,20] p & G[0,20] !p", max_length=5)
    assert w.kind == "unsatisfiable" and not w.exact
    assert "up to 5 steps" in w.message
    (w,) = warnings("F[0,20] p & G[0,20] !p", max_length=25)
    assert w.kind == "unsatisfiable" and w.exact
    (w,) = warnings("F[0,20] p | G[0,20] !p", max_length=5)
    assert w.kind == "valid" and not w.exact and "up to 5 steps" in w.message


# ---------------------------------------------------------------------------------------------
# English

EXPLAINED = [
    ("G (take -> X examine)",
     "Whenever a step is labelled take, the next step must be labelled examine (the "
     "session must not end before it)."),
    ("G (p -> WX q)",
     "Whenever a step is labelled p, the next step must be labelled q (if the session "
     "reaches it)."),
    ("F[1,4] use_knife",
     "One of the steps 1 to 4 steps after the first step is labelled use_knife (at a step "
     "the session reaches)."),
    ('output.tool == "send_money"',
     "The agent calls send_money (output.tool)."),
    ("data.balance < prev(data.balance)",
     "Balance (data.balance) is under the previous step's balance (data.balance)."),
    ("prev(x) >= 3",
     "The previous step's x is at least 3."),
    ("x != null",
     "x differs from null."),
    ("!(x > 5)",
     "x is not over 5."),
    ("p -> q",
     "If the first step is labelled p, then the first step is labelled q."),
    ("p <-> X q",
     "The first step is labelled p if and only if the second step is labelled q (the "
     "session must not end before it)."),
    ("p & q & r",
     "All of these: the first step is labelled p; the first step is labelled q; and the "
     "first step is labelled r."),
    ("p | q | r",
     "At least one of these: the first step is labelled p; the first step is labelled q; "
     "or the first step is labelled r."),
    ("(p | q) & r",
     "Both the first step is labelled r and (either the first step is labelled p or the "
     "first step is labelled q)."),
    ("(p -> q) -> r",
     "If (if the first step is labelled p, then the first step is labelled q), then the "
     "first step is labelled r."),
    ("p U q",
     "Some step is labelled q, and every step before that is labelled p."),
    ("!ship W paid",
     "No step labelled ship before the first step labelled paid (and none at all if that "
     "never happens)."),
    ("a R b",
     "At every step up to and including the first step labelled a (at every step if there "
     "is none): the step is labelled b."),
    ("G (p -> F q)",
     "Whenever a step is labelled p, this step or a later one must be labelled q."),
    ("G (req -> (!grant U ack))",
     "Whenever a step is labelled req, from this step on, no step labelled grant before "
     "the first step labelled ack, and a step labelled ack must happen at this step or a "
     "later one."),
    ("G (p -> (q W r))",
     "Whenever a step is labelled p, from this step on, at every step before the first "
     "step labelled r (at every step if there is none): the step is labelled q."),
    ("F G p",
     "At some step: this step and every later one is labelled p."),
    ("!X p",
     "The second step is not labelled p (if the session reaches it)."),
    ("X !p",
     "The second step is not labelled p (the session must not end before it)."),
    ("WX p",
     "The second step is labelled p (if the session reaches it)."),
    ("X true",
     "The second step exists (the session goes on to it)."),
    ("WX false",
     "The second step does not exist (the session ends at the first step)."),
    ("G[1,3] p",
     "Every step 1 to 3 steps after the first step is labelled p (those the session "
     "reaches)."),
    ("F[2,2] p",
     "The step 2 steps after the first step is labelled p (the session must not end "
     "before it)."),
    ("G (p -> G[2,2] q)",
     "Whenever a step is labelled p, the step 2 steps after this step is labelled q (if "
     "the session reaches it)."),
    ("G (send -> O approve)",
     "Whenever a step is labelled send, a step labelled approve must have happened at "
     "this step or an earlier one."),
    ("G (send -> H !block)",
     "Whenever a step is labelled send, no step labelled block may have happened at this "
     "step or any earlier one."),
    ("G (p -> Y q)",
     "Whenever a step is labelled p, the previous step must be labelled q (there must be "
     "one)."),
    ("G (p -> Z q)",
     "Whenever a step is labelled p, the previous step must be labelled q (if there is "
     "one)."),
    ("G (p -> (q S r))",
     "Whenever a step is labelled p, this step or an earlier one is labelled r, and every "
     "step after that up to and including this step is labelled q."),
    ("!(p U q)",
     "No step labelled q before the first step where it is not labelled p and it is not "
     "labelled q (and none at all if that never happens)."),
    ("G (F p & F q)",
     "At every step: both (this step or a later one is labelled p) and (this step or a "
     "later one is labelled q)."),
    ('"stop_reason:end turn"',
     "The agent stops (end turn)."),
    ("true",
     "Always satisfied (the formula is true)."),
    ("false",
     "Never satisfied (the formula is false)."),
]


@pytest.mark.parametrize(("f", "english"), EXPLAINED)
def test_explain(f, english):
    assert explain(f) == english


@settings(max_examples=300, deadline=None)
@given(formulas(6))
def test_explain_never_raises_and_mentions_every_atom(f):
    text = explain(f)
    assert text == explain(f)
    assert text.endswith(".")
    if text in (explain("true"), explain("false")) or wording.IMPOSSIBLE in text \
            or wording.NOTHING_REQUIRED in text:
        return  # (a part) equivalent to a constant, and says so: its atoms need not be named
    # Every atom of the formula it reads: `X false` is read as false (wording._tidy).
    for g in wording._tidy(f).subformulas():
        if g.op == "atom":
            assert fm.quote_atom(g.name) in text
        if g.op == "cmp":
            for kind, value in (g.payload.left, g.payload.right):
                if kind in ("path", "prev"):
                    assert value in text
    assert text.count("(") == text.count(")")


# ---------------------------------------------------------------------------------------------
# Purity

def test_review_imports_without_django():
    script = ("import sys, studio.logic.review; "
              "print(any(m == 'django' or m.startswith('django.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
