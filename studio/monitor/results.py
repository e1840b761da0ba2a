"""A session's monitor results as an audit stores them (no Django): one ``StoredResult`` per
rule version, with the verdict timeline and each violation's witness as JSON text.  Shared by
the audit's batches and by the audit on arrival, which computes them in another process."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .monitors import PENDING, label_names
from .session import SessionMonitor


@dataclass
class StoredResult:
    """One session's result for one rule version, ready to store."""

    session_id: int
    version_id: int
    steps: int
    verdict: str
    first_verdict_step: int | None
    final: str
    residual: str
    timeline: list
    # (trigger, detected, at_end, witness as JSON text)
    violations: list = field(default_factory=list)


class WitnessText:
    """Witnesses as JSON text ``[{"step", "labels", "residual"}, ...]``, from cached pieces:
    label sets and residuals repeat across a batch, and obligations that advanced together
    share their witness entries."""

    def __init__(self):
        self.labels: dict = {}
        self.residuals: dict = {}

    def entry(self, w, at) -> str:
        labels = self.labels.get(w.labels)
        if labels is None:
            labels = self.labels[w.labels] = json.dumps(list(label_names(w.labels)))
        residual = self.residuals.get(w.residual)
        if residual is None:
            residual = self.residuals[w.residual] = json.dumps(w.residual.text)
        return f'{{"step": {at(w.step)}, "labels": {labels}, "residual": {residual}}}'


def session_results(session_id: int, monitor: SessionMonitor, steps: list[int],
                     version_ids: list[int], texts: WitnessText) -> list[StoredResult]:
    n = len(steps)
    # Positions to stored step numbers; the identity in the usual case.
    at = (lambda i: i) if not n or (steps[0] == 0 and steps[-1] == n - 1) else steps.__getitem__
    entries: dict[int, str] = {}  # id(witness entry) -> its JSON; the monitor keeps them alive
    out = []
    for version_id, result in zip(version_ids, monitor.results()):
        first = result.first_verdict_step
        if not n:
            timeline = []
        elif first is None:
            timeline = [[at(0), PENDING]]
        elif first == 0:
            timeline = [[at(0), result.verdict]]
        else:
            timeline = [[at(0), PENDING], [at(first), result.verdict]]
        violations = []
        for v in result.violations:
            parts = []
            for w in v.witness:
                text = entries.get(id(w))
                if text is None:
                    text = entries[id(w)] = texts.entry(w, at)
                parts.append(text)
            violations.append((at(v.trigger), at(v.detected), v.at_end,
                               "[" + ", ".join(parts) + "]"))
        out.append(StoredResult(session_id, version_id, n, result.verdict,
                           at(first) if first is not None else None, result.final,
                           result.residual.text, timeline, violations))
    return out
