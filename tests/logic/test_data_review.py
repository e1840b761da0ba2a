"""Review aids with real data values (issue 17): traces are real events, checked by the
finite-trace oracle; "none" is checked against brute force over short traces of values around
the formula's constants."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.logic.data_review import (
    data_equivalent,
    find_data_distinguishing_trace,
    find_data_trace,
)
from studio.logic.finite import holds
from studio.logic.review import find_trace

from .strategies import formulas


def _steps(events):
    return [(frozenset(e["labels"]), e) for e in events]


def _brute(f, satisfying: bool, length: int = 2) -> bool:
    """Some trace of at most ``length`` steps, x from values around the constants (and missing),
    atoms p q r, satisfies (violates) f."""
    values = [None, 0, 1, 1.5, 2, 2.5, 3]
    atoms = [frozenset(), frozenset({"p"}), frozenset({"q"}), frozenset({"p", "q", "r"})]
    letters = [(a, {"labels": sorted(a), "data": {} if x is None else {"x": x}})
               for a in atoms for x in values]
    for n in range(1, length + 1):
        for combo in itertools.product(letters, repeat=n):
            if holds(f, list(combo)) == satisfying:
                return True
    return False


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(formulas(3, monitorable=True, bounded=False), st.booleans())
def test_traces_found_are_real_and_none_means_none(f, satisfying):
    found = find_data_trace(f, satisfying, max_length=8)
    if found.found:
        assert holds(f, _steps(found.events)) == satisfying, (f.text, found.events)
    elif found.exhaustive:
        assert not _brute(f, satisfying), f.text


def test_contradictory_data_is_unsatisfiable_where_the_abstraction_was_not():
    text = "G(data.balance >= 0) & F(data.balance < 0 & data.balance > 10)"
    assert find_trace(text, True).found  # propositions: some letter makes both true
    found = find_data_trace(text, True)
    assert not found.found and found.exhaustive and found.exact_data
    assert "data atoms read as data" in found.message


def test_traces_carry_values_through_prev():
    found = find_data_trace("F(data.x > 5 & X(data.x < prev(data.x) & data.x > 3))", True)
    xs = [e["data"]["x"] for e in found.events]
    assert len(xs) == 2 and xs[0] > 5 and 3 < xs[1] < xs[0]
    strings = find_data_trace('G(data.s != "a") & F(data.s > "a" & data.s < "b")', True)
    s = strings.events[0]["data"]["s"]
    assert "a" < s < "b"


def test_equivalence_with_data():
    assert data_equivalent("G(data.x > 5)", "G(data.x > 5 & data.x > 3)") is True
    assert data_equivalent("data.x > prev(data.x)", "false") is True  # no prev at step 0
    differ = find_data_distinguishing_trace("G(data.x > 5)", "G(data.x > 3)")
    assert differ.found and 3 < differ.events[0]["data"]["x"] <= 5
    # Propositional formulas keep the propositional search.
    assert data_equivalent("G p", "!F !p") is True
