"""How well an audit's verdicts agree with ground truth: per rule TP, FP, FN, TN, precision,
recall and F1, and the same over all rules at once.  Pure Python, no Django: usable from a shell
and tested without a database.

A *positive* is a violation: a true positive is a session the audit found violating a rule that
the ground truth says does violate it.  Only sessions with a label for the rule count.

Ratios whose denominator is zero are undefined and returned as ``None`` (shown as "—"), never as
0 or a crash: precision with no session found violating, recall with no session truly violating,
F1 with neither.  F1 is computed as 2TP / (2TP + FP + FN), which equals the harmonic mean of
precision and recall whenever both are defined and non-zero, and is 0, not undefined, when there
were positives but none was found correctly.

Over several rules (paper 000, Appendix F.1: one F1 per auditing method, over every detected
violation of every rule), two averages:

* **micro**: every labelled (session, rule) pair is one instance; the TP, FP, FN and TN of the
  rules are summed and precision, recall and F1 computed from the sums.  Rules with many
  labelled sessions weigh more.  This is the paper's overall figure;
* **macro**: the unweighted mean over rules of each rule's own precision, recall and F1.  A rule
  where a figure is undefined is left out of that figure's mean (and the number of rules
  averaged is kept beside it); the mean is undefined when no rule defines the figure.  Every
  rule weighs the same, so a rare rule the labelers get wrong shows here first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

UNDEFINED = "—"


@dataclass(frozen=True)
class Confusion:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def labelled(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def precision(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float | None:
        return _ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn)

    def add(self, found: bool, truly: bool) -> Confusion:
        """This count with one more labelled session."""
        if found and truly:
            return Confusion(self.tp + 1, self.fp, self.fn, self.tn)
        if found:
            return Confusion(self.tp, self.fp + 1, self.fn, self.tn)
        if truly:
            return Confusion(self.tp, self.fp, self.fn + 1, self.tn)
        return Confusion(self.tp, self.fp, self.fn, self.tn + 1)

    def as_dict(self) -> dict:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn,
                "labelled": self.labelled, "precision": self.precision,
                "recall": self.recall, "f1": self.f1}

    def __add__(self, other: Confusion) -> Confusion:
        return Confusion(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn,
                         self.tn + other.tn)


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def confusion(pairs: Iterable[tuple[bool, bool]]) -> Confusion:
    """Counts over ``(found violated, truly violated)`` pairs, one per labelled session."""
    tp = fp = fn = tn = 0
    for found, truly in pairs:
        if found and truly:
            tp += 1
        elif found:
            fp += 1
        elif truly:
            fn += 1
        else:
            tn += 1
    return Confusion(tp, fp, fn, tn)


def by_rule(items: Iterable[tuple[str, bool, bool]]) -> dict[str, Confusion]:
    """Counts per rule over ``(rule, found violated, truly violated)``."""
    out: dict[str, Confusion] = {}
    for rule, found, truly in items:
        out[rule] = out.get(rule, Confusion()).add(found, truly)
    return out


def ratio_text(value: float | None, digits: int = 2) -> str:
    """A ratio for people: ``0.67``, or "—" when it is undefined."""
    return UNDEFINED if value is None else f"{value:.{digits}f}"


@dataclass(frozen=True)
class Mean:
    """A macro-averaged figure: the mean of the rules' figures where defined, and how many."""

    value: float | None
    rules: int


@dataclass(frozen=True)
class Overall:
    """Agreement over all the rules of an audit: micro counts and macro means (see above)."""

    micro: Confusion
    rules: int  # rules with at least one labelled session
    macro_precision: Mean
    macro_recall: Mean
    macro_f1: Mean

    def as_dict(self) -> dict:
        return {"rules": self.rules, "micro": self.micro.as_dict(),
                "macro": {"precision": self.macro_precision.value,
                          "recall": self.macro_recall.value, "f1": self.macro_f1.value,
                          "precision_rules": self.macro_precision.rules,
                          "recall_rules": self.macro_recall.rules,
                          "f1_rules": self.macro_f1.rules}}


def _mean(values: list[float | None]) -> Mean:
    defined = [v for v in values if v is not None]
    return Mean(sum(defined) / len(defined) if defined else None, len(defined))


def overall(counts: Iterable[Confusion]) -> Overall:
    """Micro and macro figures over the per-rule counts (one ``Confusion`` per rule).  Rules
    without a labelled session add nothing to either."""
    rules = [c for c in counts if c.labelled]
    micro = sum(rules, Confusion())
    return Overall(micro, len(rules), _mean([c.precision for c in rules]),
                   _mean([c.recall for c in rules]), _mean([c.f1 for c in rules]))
