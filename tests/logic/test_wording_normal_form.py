"""Whether a rule is an invariant ``G phi`` is decided once, on its negation normal form
(``studio.logic.progression.is_invariant``), and the English printer reads an invariant from
that form (issue 25): formulas equal in normal form read the same.  No database."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings

from studio.logic import formula as fm
from studio.logic.finite import holds
from studio.logic.parser import parse
from studio.logic.progression import is_invariant, nnf
from studio.logic.wording import _as_written, explain
from tests.logic.strategies import events, formulas, to_trace

PAIRS = [
    ("G !p", "!F p"),
    ("G (p -> q)", "!F (p & !q)"),
    ("G (p -> q)", "G (!p | q)"),
    ("G (p -> F q)", "!F (p & G !q)"),
    ("G !(p & q)", "G (p -> !q)"),
    ("G ((p | q) -> X r)", "G ((!p & !q) | X r)"),
    ("G (tool_call:pay -> O tool_call:verify)", "!F (tool_call:pay & !O tool_call:verify)"),
]


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_rules_equal_in_normal_form_read_the_same(a, b):
    fa, fb = parse(a), parse(b)
    assert nnf(fa) is nnf(fb) and is_invariant(fa)
    assert explain(fa) == explain(fb)


@settings(max_examples=300, deadline=None)
@given(formulas(4))
def test_an_invariant_reads_as_its_normal_form(f):
    invariant = fm.G(f)
    assume(is_invariant(invariant))  # G true is true
    assert explain(invariant) == explain(nnf(invariant))
    # The same rule written as "never the opposite" reads the same.
    assert explain(fm.Not(fm.F(fm.Not(f)))) == explain(invariant)


@settings(max_examples=300, deadline=None)
@given(formulas(4), events(max_size=6))
def test_the_written_form_it_reads_is_equivalent(f, trace):
    body = nnf(f)
    assert holds(_as_written(body), to_trace(trace)) == holds(body, to_trace(trace))


def test_a_rule_against_several_events_still_reads_never():
    # "never this event" is how the notes of what a reading would flag name an event
    # (studio.rules.sampling.event_words): a disjunction of events keeps its "Never:".
    assert explain("G !(tool_call:a | tool_call:b)") == explain("G (!tool_call:a & !tool_call:b)")
    assert explain("G !(tool_call:a | tool_call:b)").startswith("Never: ")
