"""Comparing stored audit results: two runs of a workspace (per rule), or two rule versions
inside one run (an impact check).  One comparison of result pairs serves both.

For each session audited by both sides, a rule's verdict is the one verdict
(``studio.monitor.verdicts.session_verdict``, through ``SessionResult.session_verdict``); its
violations are keyed by (trigger step, detection step).  A session *changes* when its verdict or
its violation count differs, or a violation is new or gone; ``step`` is the first step where the
two differ: the earliest detection of a new or disappeared violation, else (only the end
verdicts differ) the session's last step.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from studio import exports
from studio.audits.models import AuditRun, SessionResult, ViolationRecord
from studio.monitor.verdicts import SATISFIED, VIOLATED, verdict_words, with_old_names

# Sessions listed per rule (the counts are always complete).
LIST_LIMIT = 500


@dataclass
class SessionChange:
    session_id: int
    session: str
    verdict_before: str
    verdict_after: str
    violations_before: int
    violations_after: int
    new: list[tuple[int, int]]
    gone: list[tuple[int, int]]
    step: int | None
    result_before: int
    result_after: int

    @property
    def verdict_changed(self) -> bool:
        return self.verdict_before != self.verdict_after

    @property
    def words_before(self) -> str:
        return verdict_words(self.verdict_before)

    @property
    def words_after(self) -> str:
        return verdict_words(self.verdict_after)

    def as_dict(self) -> dict:
        return {"session_id": self.session_id, "session": self.session,
                "verdict_before": self.words_before, "verdict_after": self.words_after,
                "verdict_before_was": self.verdict_before,
                "verdict_after_was": self.verdict_after,
                "verdict_changed": self.verdict_changed,
                "violations_before": self.violations_before,
                "violations_after": self.violations_after,
                "new_violations": [{"trigger": t, "detected": d} for t, d in self.new],
                "disappeared_violations": [{"trigger": t, "detected": d} for t, d in self.gone],
                "step": self.step}


@dataclass
class RuleComparison:
    rule_id: int
    rule: str
    version_before: int | None
    version_after: int | None
    sessions_compared: int = 0
    verdict_changed: int = 0
    to_violated: int = 0
    to_complied: int = 0
    count_changed: int = 0
    moved_only: int = 0
    new_violations: int = 0
    disappeared_violations: int = 0
    changes: list[SessionChange] = field(default_factory=list)
    only_before: bool = False
    only_after: bool = False
    sessions_only_before: int = 0  # audited by one side only (erased, or out of the other's scope)
    sessions_only_after: int = 0

    def counts(self) -> dict:
        return {"sessions_compared": self.sessions_compared,
                "sessions_only_before": self.sessions_only_before,
                "sessions_only_after": self.sessions_only_after,
                "sessions_changed": self.changed_sessions,
                "verdict_changed": self.verdict_changed, "to_violated": self.to_violated,
                "to_complied": self.to_complied, "to_satisfied": self.to_complied,
                "count_changed": self.count_changed,
                "moved_only": self.moved_only,
                "new_violations": self.new_violations,
                "disappeared_violations": self.disappeared_violations}

    changed_sessions: int = 0

    def as_dict(self) -> dict:
        return {"rule_id": self.rule_id, "rule": self.rule,
                "version_before": self.version_before, "version_after": self.version_after,
                "only_before": self.only_before, "only_after": self.only_after,
                **self.counts(), "sessions": [c.as_dict() for c in self.changes]}


def _results(run_id: int, version_ids: Iterable[int]) -> dict[int, SessionResult]:
    """The run's results of those versions, by (version, session)."""
    rows = (SessionResult.objects.filter(run_id=run_id, rule_version_id__in=list(version_ids))
            .select_related("session", "rule_version")
            .only("id", "session_id", "rule_version_id", "steps", "verdict", "final",
                  "violation_count", "session__external_id", "session__source",
                  "session__ended_at",
                  "rule_version__counting"))
    return {(r.rule_version_id, r.session_id): r for r in rows.iterator(chunk_size=2000)}


def _violations(result_ids: list[int]) -> dict[int, set[tuple[int, int]]]:
    out: dict[int, set[tuple[int, int]]] = {}
    for chunk in range(0, len(result_ids), 5000):
        for rid, trigger, detected in (ViolationRecord.objects
                                       .filter(result_id__in=result_ids[chunk:chunk + 5000])
                                       .values_list("result_id", "trigger", "detected")):
            out.setdefault(rid, set()).add((trigger, detected))
    return out


def compare_pairs(rule: RuleComparison, before: dict[int, SessionResult],
                  after: dict[int, SessionResult]) -> RuleComparison:
    """Fill ``rule`` from the results of the two sides, by session id."""
    common = sorted(set(before) & set(after))
    rule.sessions_compared = len(common)
    rule.sessions_only_before = len(set(before) - set(after))
    rule.sessions_only_after = len(set(after) - set(before))
    # Only results that may differ need their violations read.
    suspects = [s for s in common
                if before[s].violation_count or after[s].violation_count
                or before[s].final != after[s].final]
    keys = _violations([before[s].id for s in suspects] + [after[s].id for s in suspects])
    for s in common:
        a, b = before[s], after[s]
        va, vb = a.session_verdict, b.session_verdict
        ka, kb = keys.get(a.id, set()), keys.get(b.id, set())
        if va == vb and ka == kb and a.violation_count == b.violation_count:
            continue
        new, gone = sorted(kb - ka, key=lambda k: (k[1], k[0])), sorted(
            ka - kb, key=lambda k: (k[1], k[0]))
        detections = [d for _, d in new + gone]
        step = min(detections) if detections else (max(a.steps, b.steps) - 1
                                                    if max(a.steps, b.steps) else None)
        rule.changed_sessions += 1
        if va != vb:
            rule.verdict_changed += 1
            rule.to_violated += vb == VIOLATED
            rule.to_complied += vb == SATISFIED
        if a.violation_count != b.violation_count:
            rule.count_changed += 1
        elif va == vb:
            rule.moved_only += 1  # as many violations, detected at other steps
        rule.new_violations += len(new)
        rule.disappeared_violations += len(gone)
        if len(rule.changes) < LIST_LIMIT:
            rule.changes.append(SessionChange(s, a.session.external_id, va, vb,
                                              a.violation_count, b.violation_count, new, gone,
                                              step, a.id, b.id))
    return rule


def compare_runs(before: AuditRun, after: AuditRun) -> list[RuleComparison]:
    """Per rule audited by either run (matched by rule, whatever the versions), what changed
    from ``before`` to ``after`` in the sessions both audited."""
    def versions(run):
        return {v.rule_id: v for v in run.rule_versions.select_related("rule")}

    va, vb = versions(before), versions(after)
    out = []
    for rule_id in sorted(set(va) | set(vb), key=lambda r: (va.get(r) or vb.get(r)).rule.name):
        a, b = va.get(rule_id), vb.get(rule_id)
        rule = RuleComparison(rule_id, (a or b).rule.name, a.number if a else None,
                              b.number if b else None, only_before=b is None,
                              only_after=a is None)
        if a is not None and b is not None:
            ra = {s: r for (_, s), r in _results(before.id, [a.id]).items()}
            rb = {s: r for (_, s), r in _results(after.id, [b.id]).items()}
            compare_pairs(rule, ra, rb)
        out.append(rule)
    return out


def compare_versions(run: AuditRun, before, after) -> RuleComparison:
    """Inside one run: the rule's version ``before`` (None: the rule had no approved version,
    so every session complied) against ``after``."""
    rule = RuleComparison(after.rule_id, after.rule.name, before.number if before else None,
                          after.number)
    ids = [after.id] + ([before.id] if before is not None else [])
    found = _results(run.id, ids)
    rb = {s: r for (v, s), r in found.items() if v == after.id}
    if before is not None:
        ra = {s: r for (v, s), r in found.items() if v == before.id}
    else:
        ra = {s: _Nothing(r) for s, r in rb.items()}
    return compare_pairs(rule, ra, rb)


class _Nothing:
    """A rule that is not there yet: no violation, complied."""

    id = -1
    violation_count = 0
    final = SATISFIED
    session_verdict = SATISFIED

    def __init__(self, other):
        self.session = other.session
        self.steps = other.steps


def comparison_csv(rules: list[RuleComparison]) -> str:
    """Every changed session of every rule, each cell made safe for a spreadsheet by the one
    neutraliser (studio.exports)."""
    header = ["rule", "version_before", "version_after", "session", "session_id",
              "verdict_before", "verdict_after", "violations_before", "violations_after",
              "new_violations", "disappeared_violations", "step"]
    rows = ([rule.rule, rule.version_before, rule.version_after, c.session, c.session_id,
             c.words_before, c.words_after, c.violations_before, c.violations_after,
             " ".join(f"{t}-{d}" for t, d in c.new), " ".join(f"{t}-{d}" for t, d in c.gone),
             c.step]
            for rule in rules for c in rule.changes)
    return "".join(exports.csv_lines(header, rows))


def public_summary(summary: dict | None) -> dict | None:
    """A stored impact summary as the API and pages give it: verdicts in public words, the old
    names kept under ``*_was`` and ``to_satisfied`` (deprecated).  Summaries stored before the
    words changed hold only the old names; newer ones already hold both."""
    if summary is None:
        return None
    out = {**summary, "to_complied": summary.get("to_complied", summary.get("to_satisfied", 0))}
    out["to_satisfied"] = out["to_complied"]
    out["sessions_list"] = [c if "verdict_before_was" in c
                            else with_old_names(c, ("verdict_before", "verdict_after"))
                            for c in summary.get("sessions_list", [])]
    return out
