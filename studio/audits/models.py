"""Audit runs, their batches of sessions, per-session per-rule results and violations."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studio.monitor.verdicts import PENDING, session_verdict
from studio.rules.models import RuleSet, RuleVersion
from studio.traces.models import Event, TraceSession, Upload
from studio.workspaces.models import Workspace


class StoredJSONField(models.JSONField):
    """JSON kept as written: Postgres's ``json`` type instead of ``jsonb``.  For values written
    once and read whole, never searched inside, like a witness: Postgres stores ``json`` text
    after checking it, about twice as fast as it converts the same text to ``jsonb`` (measured
    on 200,000 witnesses: 0.9 s of 2.6 s for their COPY), and a big audit stores hundreds of
    thousands of them at its end.  Other databases store it as ``JSONField`` does."""

    def db_type(self, connection):
        if connection.vendor == "postgresql":
            return "json"
        return super().db_type(connection)

    def from_db_value(self, value, expression, connection):
        if value is not None and not isinstance(value, str):  # psycopg has read the json
            return value
        return super().from_db_value(value, expression, connection)


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class AuditRunQuerySet(models.QuerySet):
    """Audits apart from impact checks.  An impact check (``studio.evidence``'s ``ImpactCheck``,
    named here only by its relation: evidence sits above audits) is a run of a draft beside the
    approved version: never offered as an audit, in no picker and no default choice."""

    def audits(self) -> AuditRunQuerySet:
        return self.filter(impact_check__isnull=True)

    def impact_checks(self) -> AuditRunQuerySet:
        return self.filter(impact_check__isnull=False)

    def with_kind(self) -> AuditRunQuerySet:
        """Runs that know their kind without a query each (``checked_draft``)."""
        return self.select_related("impact_check__version__rule")


class AuditRun(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="audit_runs")
    rule_set = models.ForeignKey(RuleSet, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="audit_runs")
    # The approved versions the run audits, fixed when it starts.
    rule_versions = models.ManyToManyField(RuleVersion, related_name="audit_runs")
    # The workspace's enabled labelers when the run started, [{"kind", "atom", "config"}]: every
    # batch (and every redelivery of one) labels events the same way, whatever is edited later.
    labelers = models.JSONField(default=list, blank=True)
    upload = models.ForeignKey(Upload, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="audit_runs")  # scope; all sessions when empty
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.QUEUED)
    sessions_total = models.PositiveIntegerField(default=0)
    sessions_done = models.PositiveIntegerField(default=0)
    batches_total = models.PositiveIntegerField(default=0)
    batches_done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When its unfinished batches were last enqueued again (by resume or the stall sweeper).
    requeued_at = models.DateTimeField(null=True, blank=True)
    # What was erased from under the run (studio.traces.erasure), oldest first: [{"at", "by",
    # "kind": "upload" | "session", "id", "name", "events", "sessions", "results", "reason",
    # "recomputed_batches"}], "results" counting this run's results removed with it,
    # "recomputed_batches" its batches computing meanwhile and computed again.  The report says so.
    erasures = models.JSONField(default=list, blank=True)

    objects = AuditRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    @property
    def checked_draft(self) -> RuleVersion | None:
        """The draft version this run is an impact check of; None for an audit."""
        check = getattr(self, "impact_check", None)  # absent: an audit
        return check.version if check is not None else None

    @property
    def kind(self) -> str:
        return "audit" if self.checked_draft is None else "impact_check"

    @property
    def draft_label(self) -> str:
        """How every page names an impact check ("check of draft v3 of rule refunds");
        "" for an audit."""
        draft = self.checked_draft
        return "" if draft is None else f"check of draft v{draft.number} of rule {draft.rule.name}"

    def erasure_notices(self) -> list[str]:
        """Each erasure in a sentence, for the report: what went, when, by whom, and how many
        of this run's results with it."""
        return [erasure_notice(entry) for entry in self.erasures]


def erasure_notice(entry: dict) -> str:
    from datetime import datetime

    def count(n: int, noun: str, plural: str | None = None) -> str:
        return f"{n:,} {noun if n == 1 else plural or noun + 's'}"

    when = datetime.fromisoformat(entry["at"]).strftime("%Y-%m-%d %H:%M UTC")
    if entry.get("kind") == "session":
        what = f"Session {entry['name']} ({count(entry['events'], 'event')})"
    else:
        what = (f"Upload {entry['name']} (#{entry['id']}: {count(entry['events'], 'event')}, "
                f"{count(entry['sessions'], 'session')})")
    who = f"by {entry['by']}" if entry.get("by") else "automatically"
    why = f" ({entry['reason']})" if entry.get("reason") else ""
    results = entry.get("results", 0)
    removed = (f"{count(results, 'result')} of this run computed from it "
               f"{'was' if results == 1 else 'were'} removed" if results else
               "none of this run's results had been computed from it")
    again = entry.get("recomputed_batches", 0)
    if again:
        removed += (f"; {count(again, 'batch', 'batches')} of this run computing while it was "
                    f"erased {'was' if again == 1 else 'were'} computed again without its events")
    return f"{what} was erased on {when} {who}{why}; {removed}."


class BatchStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class AuditBatch(models.Model):
    run = models.ForeignKey(AuditRun, on_delete=models.CASCADE, related_name="batches")
    index = models.PositiveIntegerField()
    session_ids = models.JSONField(default=list)
    status = models.CharField(max_length=20, choices=BatchStatus.choices,
                              default=BatchStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="batch_index_unique")]
        ordering = ["run_id", "index"]


class SessionResult(models.Model):
    run = models.ForeignKey(AuditRun, on_delete=models.CASCADE, related_name="results")
    batch = models.ForeignKey(AuditBatch, on_delete=models.CASCADE, related_name="results")
    session = models.ForeignKey(TraceSession, on_delete=models.CASCADE, related_name="results")
    rule_version = models.ForeignKey(RuleVersion, on_delete=models.PROTECT, related_name="+")
    steps = models.PositiveIntegerField()
    verdict = models.CharField(max_length=20)       # TRAC after the last step
    first_verdict_step = models.PositiveIntegerField(null=True, blank=True)
    final = models.CharField(max_length=20)         # LTLf at the end of the session
    residual = models.TextField()
    violation_count = models.PositiveIntegerField(default=0)
    # Per-step TRAC verdict changes [(step, verdict)] for the verdict lane.
    timeline = models.JSONField(default=list, blank=True)
    # Whether the rule's condition (p of G (p -> ...)) held at some step of the session, on
    # the labels the audit computed (labelers, built-in atoms, corrections, comparisons).
    # None: the rule applies throughout (a ban), or a result stored before this was recorded.
    triggered = models.BooleanField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "session", "rule_version"],
                                               name="one_result_per_session_rule")]
        ordering = ["session_id", "rule_version_id"]

    def trac_verdict_at(self, step: int) -> str:
        """TRAC's verdict as it stood after ``step``, from the steps where it changed."""
        verdict = PENDING
        for changed_at, value in self.timeline:
            if changed_at > step:
                break
            verdict = value
        return verdict

    @property
    def session_verdict(self) -> str:
        """The rule's one verdict in the session (``studio.monitor.verdicts.session_verdict``);
        reads ``session`` and ``rule_version``: select them with the result."""
        return session_verdict(self.violation_count, self.final, open=self.session.is_open,
                               settled=self.verdict, counting=self.rule_version.counting)


class ViolationRecord(models.Model):
    result = models.ForeignKey(SessionResult, on_delete=models.CASCADE, related_name="violations")
    trigger = models.PositiveIntegerField()
    detected = models.PositiveIntegerField()
    at_end = models.BooleanField(default=False)
    # Witness entries: [{"step", "labels", "residual"}]; inputs and outputs are the events'.
    witness = StoredJSONField(default=list)

    class Meta:
        ordering = ["result_id", "detected", "trigger"]


class GroundTruth(models.Model):
    """Whether a session truly violates a rule, as a person (or the game's own record) says.

    Sessions and rules are named, not linked: labels may be loaded before or after the logs and
    the rules they describe, and survive a session being deleted and uploaded again.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE,
                                  related_name="ground_truth")
    session = models.CharField(max_length=300)   # TraceSession.external_id
    rule = models.CharField(max_length=100)      # Rule.name
    violated = models.BooleanField()
    source = models.CharField(max_length=255, blank=True)  # the file it came from
    note = models.TextField(blank=True)
    # Who loaded the label last, and when (a later import of the same label replaces it).
    imported_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    imported_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "session", "rule"],
                                               name="one_label_per_session_rule")]
        ordering = ["rule", "session"]


class LabelCorrection(models.Model):
    """A person's word on whether ``atom`` holds at one event.  It overrides every source of that
    label - the labels the event arrived with, the built-in atoms, every labeler - in the
    labeling of any audit batch computed after it, and the session's results in the run the
    correction was made from are recomputed at once (``corrections.correct_label``)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="+")
    atom = models.CharField(max_length=200)
    value = models.BooleanField()
    corrected_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                     on_delete=models.SET_NULL, related_name="+")
    corrected_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["event", "atom"],
                                               name="one_correction_per_event_atom")]
        ordering = ["event_id", "atom"]


class LabelProvenance(models.Model):
    """Where a label an LLM labeler gave in an audit run came from: which labeler (by its atom
    and kind), which model, how confident it was, and its answer (true or false: a false answer
    is kept too, so a person can see it and correct it).  Written with the batch's results and
    replaced with them, so it always describes the labels those results were computed from."""

    run = models.ForeignKey(AuditRun, on_delete=models.CASCADE, related_name="label_provenance")
    batch = models.ForeignKey(AuditBatch, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(TraceSession, on_delete=models.CASCADE, related_name="+")
    step = models.PositiveIntegerField()
    atom = models.CharField(max_length=200)
    labeler = models.CharField(max_length=20, default="llm")  # the labeler's kind
    model = models.CharField(max_length=200)
    confidence = models.FloatField(null=True, blank=True)
    value = models.BooleanField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "session", "step", "atom"],
                                               name="one_provenance_per_run_step_atom")]
        ordering = ["run_id", "session_id", "step", "atom"]
