"""A session's monitor results as an audit stores them (no Django): one ``StoredResult`` per
rule version, with the verdict timeline and each violation's witness as JSON text.  Shared by
the audit's batches and by the audit on arrival, which computes them in another process."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from studio.copyformat import NULL, json_field, text_field
from studio.logic.reads import holds_on

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
    # Whether the rule's condition (``condition_of``: p of G (p -> ...)) held at some step;
    # None for a rule that applies throughout (a ban, no single condition).
    triggered: bool | None = None


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


def triggered(condition, label_sets) -> bool | None:
    """Whether ``condition`` held on one of the steps' label sets (None: no condition, or one
    that cannot be decided on labels)."""
    if condition is None:
        return None
    undecided = False
    for labels in label_sets:
        held = holds_on(condition, labels)
        if held:
            return True
        undecided = undecided or held is None
    return None if undecided else False


def session_results(session_id: int, monitor: SessionMonitor, steps: list[int],
                     version_ids: list[int], texts: WitnessText) -> list[StoredResult]:
    """The monitor's results for the whole session (it saw every step: ``steps`` are their
    stored numbers), one per rule version."""
    n = len(steps)
    held = [triggered(c, monitor.label_sets) for c in monitor.ruleset.conditions]
    # Positions to stored step numbers; the identity in the usual case.
    at = (lambda i: i) if not n or (steps[0] == 0 and steps[-1] == n - 1) else steps.__getitem__
    entries: dict[int, str] = {}  # id(witness entry) -> its JSON; the monitor keeps them alive
    out = []
    for version_id, result, was_triggered in zip(version_ids, monitor.results(), held):
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
                           result.residual.text, timeline, violations, was_triggered))
    return out


# The columns of the COPY texts ``copy_texts`` makes (the audit's result and violation tables).
RESULT_COLUMNS = ("id", "run_id", "batch_id", "session_id", "rule_version_id", "steps",
                  "verdict", "first_verdict_step", "final", "residual", "violation_count",
                  "timeline", "triggered")
VIOLATION_COLUMNS = ("result_id", "trigger", "detected", "at_end", "witness")


def copy_texts(results: list[StoredResult], ids: list[int], run_id: int,
               batch_id: int) -> tuple[str, str]:
    """The COPY text of ``results`` (``ids``: their row ids, in order) in ``RESULT_COLUMNS``,
    and of their violations in ``VIOLATION_COLUMNS``.  Made in one go rather than row by row:
    an audit on arrival makes them in its own process while the database loads the last."""
    if len(ids) != len(results):
        raise ValueError(f"{len(results)} results but {len(ids)} ids")
    lines = []
    violations = []
    dumps = json.dumps
    for result_id, r in zip(ids, results):
        first = NULL if r.first_verdict_step is None else r.first_verdict_step
        lines.append(f"{result_id}\t{run_id}\t{batch_id}\t{r.session_id}\t{r.version_id}\t"
                     f"{r.steps}\t{text_field(r.verdict)}\t{first}\t{text_field(r.final)}\t"
                     f"{text_field(r.residual)}\t{len(r.violations)}\t"
                     f"{json_field(dumps(r.timeline))}\t"
                     f"{NULL if r.triggered is None else 't' if r.triggered else 'f'}\n")
        for trigger, detected, at_end, witness in r.violations:
            violations.append(f"{result_id}\t{trigger}\t{detected}\t{'t' if at_end else 'f'}\t"
                              f"{json_field(witness)}\n")
    return "".join(lines), "".join(violations)
