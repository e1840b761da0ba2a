"""What an erasure (``studio.traces.erasure``) removes from the review evidence: the rule test
cases copied from erased steps, the values of the audit-log entries describing them, the
ground-truth labels of the sessions it removes, and the impact-check summaries computed from
results the erasure removed.  Registered as an erasure participant when the apps are ready
(``EvidenceConfig``), after the audits' (whose survey counts the results removed).

A case made from a session (``case_from_session``) holds that session's steps, atoms and data
values: it goes when any event of its step range is erased (a case cut short would pin another
meaning).  Its audit-log entries keep what happened, to which rule, when and by whom; their
name, source, steps, changes and reasons become ``"[erased]"``, and so does its name where a
version's case check listed it failing.  A removal is logged (``rule_case.erased``).
"""

from __future__ import annotations

from functools import reduce
from operator import or_

from django.db import connection
from django.db.models import Q, QuerySet

from studio.audits.models import GroundTruth
from studio.traces.erasure import Erasure, ErasureScope, delete_rows
from studio.workspaces.actions import LogAction
from studio.workspaces.models import AuditLogEntry
from studio.workspaces.redaction import ERASED, erased_except, redact
from studio.workspaces.services import record

from .models import ImpactCheck, RuleCase

class EvidenceErasure:
    """The review evidence's part in an erasure (``studio.traces.erasure.ErasureParticipant``)."""

    def results_of(self, touched: QuerySet) -> int:
        return 0

    def survey(self, scope: ErasureScope) -> None:
        pass

    def erase(self, scope: ErasureScope) -> dict[str, int]:
        cases, log_entries = erase_copied_cases(scope.workspace, scope.events, scope.by)
        labels = GroundTruth.objects.filter(workspace=scope.workspace,
                                            session__in=scope.emptied.values("external_id"))
        return {
            "test_cases": cases,
            "log_entries_redacted": log_entries,
            "ground_truth_labels": delete_rows(labels),
            "impact_summaries": forget_impact_summaries(
                [run for run, n in scope.results_by_run.items() if n]),
        }

    def recorded(self, erasure: Erasure, scope: ErasureScope) -> None:
        pass


# What a case's log entries keep: which rule, and what the case expected.
_KEPT_KEYS = ("rule", "rule_id", "expect", "at_step")


def erase_copied_cases(workspace, events: QuerySet, by) -> tuple[int, int]:
    """Delete the workspace's cases copied from ``events`` (the events being erased, still
    stored) and redact the log entries naming them; returns (cases, log entries changed)."""
    copied = []
    for case in (RuleCase.objects.filter(rule__workspace=workspace, source__kind="session")
                 .select_related("rule")):
        source = case.source
        session_id = source.get("session_id")
        if not isinstance(session_id, int):
            continue
        steps = events.filter(session_id=session_id)
        if isinstance(source.get("from_step"), int):
            steps = steps.filter(step__gte=source["from_step"])
        if isinstance(source.get("to_step"), int):
            steps = steps.filter(step__lte=source["to_step"])
        if steps.exists():
            copied.append(case)
    if not copied:
        return 0, 0
    ids = {case.pk for case in copied}
    for case in copied:
        record(workspace, by, LogAction.RULE_CASE_ERASED, case, rule=case.rule.name,
               rule_id=case.rule_id, reason="copied from erased events")
    RuleCase.objects.filter(pk__in=ids).delete()
    entries = AuditLogEntry.objects.filter(workspace=workspace)
    changed = redact(entries.filter(target_type="rulecase", target_id__in=ids)
                     .exclude(action="rule_case.erased"), erased_except(_KEPT_KEYS))

    def failing_names_erased(details: dict) -> dict:
        failing = details.get("failing")
        if not isinstance(failing, list):
            return details
        return {**details, "failing": [
            {**f, "name": ERASED} if isinstance(f, dict) and f.get("case_id") in ids else f
            for f in failing]}

    checked = entries.filter(action="rule_version.cases_checked")
    if connection.features.supports_json_field_contains:
        # (SQLite cannot look inside JSON: there each entry is read, and left as it is when it
        # names none of the cases.)
        checked = checked.filter(
            reduce(or_, (Q(details__contains={"failing": [{"case_id": i}]}) for i in ids)))
    changed += redact(checked, failing_names_erased)
    return len(ids), changed


def forget_impact_summaries(run_ids: list[int]) -> int:
    """Drop the kept summaries of the impact checks of these runs (they list sessions and
    results the erasure removed); the next look computes them from the results left."""
    if not run_ids:
        return 0
    return (ImpactCheck.objects.filter(run_id__in=run_ids, summary__isnull=False)
            .update(summary=None))
