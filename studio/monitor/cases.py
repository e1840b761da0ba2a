"""Running a rule test case (``studio.logic.cases``) with one rule version exactly as an audit
does (``SessionMonitor``, the version's counting, the one verdict of
``studio.monitor.verdicts.session_verdict``): whether it passes and, when not, the step where
the verdict differs from the expected one.  Pure Python, no Django."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from studio.logic.cases import COMPLY, step_event

from .session import SessionMonitor


@dataclass
class Outcome:
    passed: bool
    expected: str                  # violate | comply
    verdict: str                   # the rule's one verdict in the case's session
    detected: list[int] = field(default_factory=list)  # steps where violations were detected
    differs_at: int | None = None  # the step where the verdict differs from the expected one
    message: str = ""

    def as_dict(self) -> dict:
        return {"passed": self.passed, "expected": self.expected, "verdict": self.verdict,
                "detected": self.detected, "differs_at": self.differs_at,
                "message": self.message}


def run_case(ruleset, steps: Sequence[Mapping], expect: str, at_step: int | None = None
             ) -> Outcome:
    """Monitor ``steps`` with ``ruleset`` (a ``studio.monitor.RuleSet`` of one rule) and judge
    the expectation."""
    monitor = SessionMonitor(ruleset, witnesses=False)
    for i, step in enumerate(steps):
        monitor.feed(step_event(step, i))
    result = monitor.results()[0]
    verdict = result.session_verdict(open=False)
    detected = sorted({v.detected for v in result.violations})
    last = len(steps) - 1
    out = Outcome(True, expect, verdict, detected)
    if expect == COMPLY:
        if verdict == "violated":
            out.passed = False
            out.differs_at = detected[0] if detected else last
            out.message = (f"must comply, but the rule is violated at step {out.differs_at}")
    elif verdict != "violated":
        out.passed = False
        out.differs_at = last
        out.message = (f"must violate{_at(at_step)}, but the rule is complied with: no "
                       f"violation by the end (step {last})")
    elif at_step is not None and detected and detected[0] != at_step:
        out.passed = False
        out.differs_at = min(detected[0], at_step)
        out.message = (f"must violate at step {at_step}, but the first violation is detected "
                       f"at step {detected[0]}")
    return out


def _at(step: int | None) -> str:
    return "" if step is None else f" at step {step}"
