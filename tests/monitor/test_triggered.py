"""Whether a rule's condition held at some step of a session (``StoredResult.triggered``), as
the audit records it, against the independent finite-trace evaluator: the condition
(``condition_of``) is true at some position of the trace.  Both monitors, atoms and data atoms
(``prev()`` included), conditions under and/or/not."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from studio.logic import formula as fm
from studio.logic.finite import evaluate
from studio.logic.parser import parse
from studio.logic.reads import condition_of, holds_on, trigger_of
from studio.monitor import RuleSet, SessionMonitor
from studio.monitor.fast import FastSessionMonitor
from studio.monitor.results import WitnessText, session_results

from .strategies import ATOMS, DATA_ATOMS, traces

leaves = st.sampled_from([*[fm.Atom(a) for a in ATOMS], *DATA_ATOMS])
plain = st.recursive(leaves, lambda sub: st.one_of(st.builds(fm.And, sub, sub),
                                                   st.builds(fm.Or, sub, sub)), max_leaves=4)
consequents = st.sampled_from([fm.F(fm.Atom("r")), fm.O(fm.Atom("q")), fm.X(fm.Atom("p"))])


@st.composite
def rules(draw):
    """``G (p -> q)``, ``G (!p | q)``, ``G !(p & !O r)`` or a ban ``G !p``, ``p`` plain."""
    p, q = draw(plain), draw(consequents)
    shape = draw(st.sampled_from(["implies", "or", "exception", "ban"]))
    if shape == "implies":
        return fm.G(fm.Implies(p, q))
    if shape == "or":
        return fm.G(fm.Or(fm.Not(p), q))
    if shape == "exception":
        return fm.G(fm.Not(fm.And(p, fm.Not(fm.O(fm.Atom("r"))))))
    return fm.G(fm.Not(p))


def oracle(formula, trace) -> bool | None:
    condition = condition_of(formula)
    if condition is None:
        return None
    steps = [(event["labels"], event) for event in trace]
    return any(evaluate(condition, steps))


@settings(max_examples=300, deadline=None)
@given(st.lists(rules(), min_size=1, max_size=3), traces, st.booleans())
def test_triggered_is_whether_the_condition_held_at_some_step(formulas, trace, fast):
    ruleset = RuleSet([(f"r{i}", f) for i, f in enumerate(formulas)])
    monitor = (FastSessionMonitor if fast else SessionMonitor)(ruleset, witnesses=True)
    for event in trace:
        monitor.ingest(event) if fast else monitor.feed(event)
    results = session_results(1, monitor, list(range(len(trace))),
                              list(range(len(formulas))), WitnessText())
    assert [r.triggered for r in results] == [oracle(f, trace) for f in formulas]


def test_the_condition_of_a_rule():
    assert condition_of(parse("G (a & b -> O c)")) == parse("a & b")
    assert condition_of(parse("G !(a & x > 5 & !O c)")) == parse("a & x > 5")
    assert condition_of(parse("G !a")) is None  # a ban applies at every step
    assert trigger_of(parse("G !a")) == parse("a")  # ...though a is what it forbids
    assert condition_of(parse("F a")) is None
    assert holds_on(parse("a & !b"), {"a"}) is True
    assert holds_on(parse("a & x > 5"), {"a", "x > 5"}) is True
    assert holds_on(parse("F a"), {"a"}) is None
