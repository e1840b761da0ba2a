"""Precision, recall and F1 of an audit against ground truth (studio.audits.quality): a table of
hand-computed cases, properties over random labellings, and no Django in the module."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from studio.audits.quality import Confusion, by_rule, confusion, ratio_text

REPO_ROOT = Path(__file__).resolve().parents[2]


# (found violated, truly violated) pairs -> tp, fp, fn, tn, precision, recall, f1
CASES = [
    ([(True, True), (True, False), (False, True), (False, False)], 1, 1, 1, 1, .5, .5, .5),
    ([(True, True)] * 3 + [(True, False)], 3, 1, 0, 0, .75, 1.0, 6 / 7),
    ([(True, True), (False, True), (False, True), (False, True)], 1, 0, 3, 0, 1.0, .25, .4),
    # Nothing found violating, nothing truly violating: every ratio undefined, no crash.
    ([(False, False)] * 5, 0, 0, 0, 5, None, None, None),
    # Truly violating sessions but none found: precision undefined, recall and F1 zero.
    ([(False, True), (False, False)], 0, 0, 1, 1, None, 0.0, 0.0),
    # Found violating, none truly: precision and F1 zero, recall undefined.
    ([(True, False)], 0, 1, 0, 0, 0.0, None, 0.0),
    ([], 0, 0, 0, 0, None, None, None),
]


@pytest.mark.parametrize(("pairs", "tp", "fp", "fn", "tn", "precision", "recall", "f1"), CASES)
def test_hand_computed_cases(pairs, tp, fp, fn, tn, precision, recall, f1):
    counts = confusion(pairs)
    assert (counts.tp, counts.fp, counts.fn, counts.tn) == (tp, fp, fn, tn)
    assert counts.labelled == len(pairs)
    for got, expected in [(counts.precision, precision), (counts.recall, recall),
                          (counts.f1, f1)]:
        assert got == (None if expected is None else pytest.approx(expected))


def test_per_rule_counts_are_kept_apart():
    counts = by_rule([("a", True, True), ("b", True, False), ("a", False, True),
                      ("b", False, False), ("a", True, True)])
    assert counts == {"a": Confusion(tp=2, fn=1), "b": Confusion(fp=1, tn=1)}
    assert ratio_text(counts["a"].recall) == "0.67"
    assert ratio_text(counts["b"].precision) == "0.00"
    assert ratio_text(counts["b"].recall) == "—"


pairs_strategy = st.lists(st.tuples(st.booleans(), st.booleans()), max_size=60)


@given(pairs_strategy)
def test_ratios_are_in_range_and_f1_is_the_harmonic_mean(pairs):
    counts = confusion(pairs)
    assert counts.labelled == len(pairs)
    for value in (counts.precision, counts.recall, counts.f1):
        assert value is None or 0 <= value <= 1
    p, r = counts.precision, counts.recall
    if p is not None and r is not None and p + r > 0:
        assert counts.f1 == pytest.approx(2 * p * r / (p + r))
    # Undefined exactly when nothing is positive, in truth or found.
    assert (counts.f1 is None) == (counts.tp + counts.fp + counts.fn == 0)


@given(pairs_strategy)
def test_adding_one_by_one_agrees_with_counting_at_once(pairs):
    counts = Confusion()
    for found, truly in pairs:
        counts = counts.add(found, truly)
    assert counts == confusion(pairs)
    assert counts.as_dict()["labelled"] == len(pairs)


@given(st.lists(st.tuples(st.sampled_from("abc"), st.booleans(), st.booleans()), max_size=60))
def test_per_rule_counts_sum_to_the_whole(items):
    counts = by_rule(items)
    assert sum(c.labelled for c in counts.values()) == len(items)
    for rule, c in counts.items():
        assert c == confusion((f, t) for r, f, t in items if r == rule)


def test_the_module_imports_without_django():
    script = ("import json, sys; import studio.audits.quality; "
              "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'django')))")
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
