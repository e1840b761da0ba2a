"""What an erasure (``studio.traces.erasure``) removes from the audits: the results, violations,
label provenance and label corrections of every session that had an erased event, in every run;
and each run that covered those sessions records the erasure (``AuditRun.erasures``).

Registered as an erasure participant when the apps are ready (``AuditsConfig``)."""

from __future__ import annotations

from django.db.models import Count, QuerySet

from studio.traces.erasure import Erasure, ErasureScope, delete_rows

from .models import (
    AuditRun,
    LabelCorrection,
    LabelProvenance,
    RunStatus,
    SessionResult,
    ViolationRecord,
)


class AuditErasure:
    """The audits' part in an erasure (``studio.traces.erasure.ErasureParticipant``)."""

    def results_of(self, touched: QuerySet) -> int:
        return SessionResult.objects.filter(session_id__in=touched).count()

    def survey(self, scope: ErasureScope) -> None:
        results = SessionResult.objects.filter(session_id__in=scope.touched)
        scope.results_by_run.update(results.order_by().values("run_id").annotate(n=Count("id"))
                                    .values_list("run_id", "n"))
        if scope.upload_id is not None:
            scope.runs_in_scope.update(AuditRun.objects.filter(upload_id=scope.upload_id)
                                       .values_list("id", flat=True))
        scope.runs.update(scope.results_by_run, scope.runs_in_scope,
                          _unfinished_runs_covering(scope.workspace, scope.touched))

    def erase(self, scope: ErasureScope) -> dict[str, int]:
        touched = scope.touched
        delete_rows(ViolationRecord.objects.filter(result__session_id__in=touched))
        delete_rows(SessionResult.objects.filter(session_id__in=touched))
        delete_rows(LabelProvenance.objects.filter(session_id__in=touched))
        column, value = scope.erased_by  # joined to the events, not a list of a million ids
        delete_rows(LabelCorrection.objects.filter(**{f"event__{column}": value}))
        return {}

    def recorded(self, erasure: Erasure, scope: ErasureScope) -> None:
        for run in AuditRun.objects.select_for_update().filter(pk__in=scope.runs).order_by("pk"):
            run.erasures = [*run.erasures,
                            erasure.for_run(scope.results_by_run.get(run.pk, 0),
                                            scope=run.pk in scope.runs_in_scope)]
            run.save(update_fields=["erasures"])


def _unfinished_runs_covering(workspace, touched: QuerySet) -> set[int]:
    """Runs still under way (or failed, to be resumed) whose batches include a touched session:
    they may have no result for it yet, but they were planned over it."""
    batches = list(AuditRun.objects.filter(workspace=workspace)
                   .exclude(status=RunStatus.DONE)
                   .values_list("id", "batches__session_ids"))
    if not batches:
        return set()
    ids = set(touched)
    return {run for run, session_ids in batches if session_ids and ids.intersection(session_ids)}
