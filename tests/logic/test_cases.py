"""Rule test cases in the pure core: steps checked against what a rule reads (step and field
named), cases run through the same monitors as audits, the library's cases, and no Django."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.logic import library
from studio.logic.cases import (CaseError, Reads, check_steps, parse_table, steps_from_trace,
                                table_text)
from studio.logic.finite import holds
from studio.logic.library_cases import cases_for
from studio.logic.parser import parse
from studio.monitor import RuleSet
from studio.monitor.cases import run_case
from tests.logic.strategies import label_traces, labels_only, monitorable_formulas


def rules(formula: str, counting: str | None = None) -> RuleSet:
    return RuleSet([("r", formula, counting)])


def test_outcomes_name_the_step_where_the_verdict_differs():
    rs = rules("G(take -> X examine)")
    assert run_case(rs, [{"atoms": ["take"]}, {"atoms": ["examine"]}], "comply").passed
    wrong = run_case(rs, [{"atoms": ["take"]}, {"atoms": []}, {"atoms": []}], "comply")
    assert (wrong.passed, wrong.differs_at, wrong.verdict) == (False, 1, "violated")
    never = run_case(rs, [{"atoms": []}, {"atoms": []}], "violate")
    assert (never.passed, never.differs_at) == (False, 1)
    late = run_case(rs, [{"atoms": []}, {"atoms": ["take"]}, {"atoms": []}], "violate", 1)
    assert (late.passed, late.differs_at) == (False, 1)
    assert "first violation is detected at step 2" in late.message


def test_counting_is_the_versions():
    # Under `first` counting the second failure is not a violation; the verdict is the same.
    steps = [{"atoms": ["take"]}, {"atoms": []}]
    assert run_case(rules("G(take -> X examine)", "first"), steps, "violate", 1).passed


def test_data_paths_and_refusals():
    f = parse("G(data.amount > prev(data.amount) -> F approved)")
    reads = Reads.of([f])
    steps = check_steps(parse_table("data.amount=5\ndata.amount=9\napproved"), reads)
    assert steps[1] == {"atoms": [], "data": {"data.amount": 9}}
    assert run_case(RuleSet([("r", f)]), steps, "comply").passed
    assert not run_case(RuleSet([("r", f)]), steps[:2], "comply").passed
    with pytest.raises(CaseError) as found:
        check_steps([{"atoms": []}, {"data": {"output.amount": 1}}], reads)
    assert found.value.field == "steps[1].data.output.amount"
    with pytest.raises(CaseError) as found:
        check_steps([{"data": {"data.amount": float("nan")}}], reads)
    assert found.value.field == "steps[0].data.data.amount"
    assert table_text(steps) == "data.amount=5\ndata.amount=9\napproved"


def test_promoted_traces_get_data_values_or_are_refused():
    f = parse('G(data.status == "error" -> X retry)')
    (step, *_) = steps_from_trace([{'data.status == "error"'}, set()], f)
    assert step["data"] == {"data.status": "error"}
    with pytest.raises(CaseError):
        steps_from_trace([{"data.x > prev(data.x)"}], parse("G(data.x > prev(data.x))"))


@pytest.mark.parametrize("rule", library.RULES, ids=lambda r: r.name)
def test_every_library_rule_passes_its_own_cases(rule):
    cases = cases_for(rule.name)
    assert {c.expect for c in cases} == {"violate", "comply"}
    reads = Reads.of([rule.parsed()])
    rs = RuleSet([(rule.name, rule.formula, None)])
    for case in cases:
        outcome = run_case(rs, check_steps(case.as_steps(), reads), case.expect, case.at_step)
        assert outcome.passed, (case.name, outcome)


def test_the_cases_core_imports_no_django():
    code = ("import sys, studio.logic.cases, studio.logic.library_cases; "
            "sys.exit('django' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# The one verdict of a case, under the rule's default counting, is the finite-trace oracle's.

@settings(max_examples=300, deadline=None)
@given(monitorable_formulas(4, data=False), label_traces(1, 8), st.booleans())
def test_a_case_passes_exactly_when_the_oracle_agrees(formula, trace, say_holds):
    rs = RuleSet([("r", formula)])
    steps = [{"atoms": sorted(letter), "data": {}} for letter in trace]
    truth = holds(formula, labels_only(trace))
    expect = "comply" if say_holds else "violate"
    outcome = run_case(rs, steps, expect)
    assert outcome.passed == (truth == say_holds), (formula.text, trace, outcome)
    if not outcome.passed:
        assert outcome.differs_at is not None and 0 <= outcome.differs_at < len(trace)
