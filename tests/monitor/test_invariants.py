"""Whether a rule is an invariant ``G phi`` is decided on its negation normal form, in one place
(``studio.logic.progression.is_invariant`` / ``invariant_body``): ``!F p`` is ``G !p`` to the
monitor, to the counting modes and to the explanation of a violation alike."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from studio.logic import formula as fm
from studio.logic.progression import invariant_body, is_invariant, nnf
from studio.logic.wording import explain
from studio.monitor import RuleSet, SessionMonitor
from studio.monitor.explain import explain_violation
from studio.monitor.verdicts import PER_INSTANCE, effective_counting

from .strategies import ATOMS, DATA_ATOMS, formulas, traces

LEAVES = [fm.Atom(a) for a in ATOMS] + list(DATA_ATOMS)

# The same rule written two ways: as an invariant, and as the negation of an eventuality.
WRITINGS = [("G !({})", "!F ({})"), ("G ({})", "!F !({})"), ("G !({})", "!!G !({})")]


def _explained(formula: str, events: list[dict], counting: str | None) -> list[tuple]:
    monitor = SessionMonitor(RuleSet([("rule", formula, counting)]))
    for event in events:
        monitor.feed(event)
    return [(v["trigger"], v["detected"], v["at_end"],
             explain_violation(formula, v["trigger"], v["detected"], v["at_end"], v["witness"],
                               counting=counting))
            for v in (v.to_json() for v in monitor.results()[0].violations)]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(LEAVES), st.sampled_from(WRITINGS), traces,
       st.sampled_from([None, PER_INSTANCE]))
def test_two_writings_of_an_invariant_count_and_read_the_same(leaf, writing, trace, counting):
    invariant, other = (w.format(leaf.text) for w in writing)
    assert effective_counting(None, invariant) == effective_counting(None, other) == PER_INSTANCE
    assert _explained(invariant, trace, counting) == _explained(other, trace, counting)


def test_never_p_reads_the_same_whichever_way_it_is_written():
    events = [{"labels": [], "data": {"x": 0}}, {"labels": ["p"], "data": {"x": 0}}]
    said = {f: _explained(f, events, None) for f in ("G !p", "!F p", "!(F p)")}
    assert said["G !p"] == [(1, 1, False,
                             "Step 1: the step was labelled p, which the rule never allows.")]
    assert said["!F p"] == said["!(F p)"] == said["G !p"]


@settings(max_examples=300, deadline=None)
@given(formulas(4))
def test_an_invariant_is_one_by_its_normal_form(phi):
    written = fm.G(phi)
    negated = fm.Not(fm.F(fm.Not(phi)))  # the same rule: "never not phi"
    assert is_invariant(written) == is_invariant(negated) == (nnf(written).op == "G")
    if is_invariant(written):
        assert nnf(invariant_body(written)) == nnf(invariant_body(negated)) \
            == nnf(written).args[0]
    else:
        assert invariant_body(written) is None and invariant_body(negated) is None


def test_a_conjunction_of_invariants_is_not_one_invariant():
    # G a & G b means what G(a & b) means, but it is not of the form G phi: counted per
    # violation of the whole rule, as the monitor counts it.
    assert not is_invariant(fm.And(fm.G(fm.Atom("a")), fm.G(fm.Atom("b"))))
    assert invariant_body(fm.And(fm.G(fm.Atom("a")), fm.G(fm.Atom("b")))) is None


@given(st.sampled_from(LEAVES), st.sampled_from(WRITINGS))
def test_the_rule_reads_the_same_in_english_whichever_way_it_is_written(leaf, writing):
    invariant, other = (w.format(leaf.text) for w in writing)
    assert explain(invariant) == explain(other)
