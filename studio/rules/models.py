"""Rules, their reviewed versions, rule sets, and the labelers that produce their atoms."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studio.monitor.verdicts import effective_counting
from studio.workspaces.models import Workspace


class Rule(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="rules")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "name"],
                                               name="rule_name_unique_in_workspace")]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def approved_version(self) -> "RuleVersion | None":
        """The rule's newest approved version (``RuleVersionQuerySet.newest_approved``)."""
        return self.versions.newest_approved().first()


class VersionStatus(models.TextChoices):
    DRAFT = "draft"
    IN_REVIEW = "in_review"
    APPROVED = "approved"
    REJECTED = "rejected"


class RuleVersionQuerySet(models.QuerySet):
    def newest_approved(self) -> "RuleVersionQuerySet":
        """The newest approved version of each rule: of its approved versions, the one with the
        highest number.  Drafts, versions in review and rejected versions never count, however
        new; a rule with no approved version has none.  The one definition every surface reads
        (studio.rules.monitoring.approved_versions and live_versions build on it)."""
        newer = RuleVersion.objects.filter(rule=models.OuterRef("rule"),
                                           status=VersionStatus.APPROVED,
                                           number__gt=models.OuterRef("number"))
        return self.filter(status=VersionStatus.APPROVED).filter(~models.Exists(newer))


class RuleVersion(models.Model):
    """One formula of a rule.  Drafts are edited; a version in review is frozen; only an
    approved version audits, and only a reviewer who is not its author approves it."""

    rule = models.ForeignKey(Rule, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    formula = models.TextField()
    english = models.TextField(blank=True)
    # How violations are counted (studio.monitor.verdicts.COUNTING_MODES), resolved when the
    # version is written: a version's counting never changes, a different one is a new version.
    counting = models.CharField(max_length=20, default="")
    status = models.CharField(max_length=20, choices=VersionStatus.choices,
                              default=VersionStatus.DRAFT)
    # The person who wrote it; a version written through a machine token also names the token
    # (and its creator as the person, when the token has one).
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                               on_delete=models.PROTECT, related_name="+")
    author_token = models.ForeignKey("workspaces.ApiToken", null=True, blank=True,
                                     on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                 on_delete=models.PROTECT, related_name="+")
    reviewer_token = models.ForeignKey("workspaces.ApiToken", null=True, blank=True,
                                       on_delete=models.PROTECT, related_name="+")
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_comment = models.TextField(blank=True)
    # The warnings the formula had when it was submitted (studio.rules.vocabulary: atoms nothing
    # produces, unknown paths, mismatched comparisons, vacuity...) and the author's answer to
    # them, without which a version with warnings is not submitted; the reviewer reads both first.
    submitted_warnings = models.JSONField(default=list, blank=True)
    acknowledgement = models.TextField(blank=True)

    objects = RuleVersionQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rule", "number"],
                                               name="version_number_unique")]
        ordering = ["rule_id", "number"]

    def save(self, *args, **kwargs):
        # Every stored version states its counting, however it was written (the services
        # resolve it; a version created directly gets its formula's default), so the pages,
        # the API and the database filter read one value.
        if not self.counting:
            self.counting = effective_counting("", self.formula)
        super().save(*args, **kwargs)


class RuleSet(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="rule_sets")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    rules = models.ManyToManyField(Rule, related_name="rule_sets", blank=True)
    # Live sessions are monitored against the rule sets marked live (all rules when none is).
    live = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "name"],
                                               name="ruleset_name_unique_in_workspace")]
        ordering = ["name"]


class LabelerKind(models.TextChoices):
    FIELD = "field"      # {"path": "output.args.amount", "op": ">", "value": 10000}
    REGEX = "regex"      # {"path": "output", "pattern": "(?i)drop", "flags": ""}
    # {"description": "the agent reveals a password", "fields": ["input", "output"],
    #  "model": "...", "batch_size": 10}: a chat model asked about each step (labeling/llm*.py)
    LLM = "llm"


class Labeler(models.Model):
    """Produces one atom from events.  Built-in atoms (tool_call:NAME, stop_reason:R, role:R)
    and the labels events arrive with need no labeler."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="labelers")
    atom = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=LabelerKind.choices)
    config = models.JSONField(default=dict)
    description = models.TextField(blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "atom"],
                                               name="one_labeler_per_atom")]
        ordering = ["atom"]


class LLMCacheEntry(models.Model):
    """One answer of a chat model, kept under (model, SHA-256 of the prompt): the database store
    of ``studio.labeling.llm`` (``llm_cache.DatabaseStore``), shared by every process, so a
    prompt - or an LLM labeler's question about one step - is paid for once.  Entries are never
    changed; deleting them only costs requests."""

    model = models.CharField(max_length=200)
    digest = models.CharField(max_length=64)
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["model", "digest"],
                                               name="one_llm_answer_per_prompt")]


class AnticipatedVerdict(models.Model):
    """One anticipatory verdict (``studio.monitor.anticipation``) decided off the request path,
    kept under (SHA-256 of the rule's formula, SHA-256 of the monitor state): shared by every
    process, so a state's search - which can take seconds - is made once, ahead of requests or
    in the background (``studio.live.anticipation``).  A verdict depends on nothing else, so
    entries are never changed; deleting them only costs searches."""

    rule_key = models.CharField(max_length=64)
    state_key = models.CharField(max_length=64)
    value = models.CharField(max_length=32)
    anticipated = models.BooleanField()
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rule_key", "state_key"],
                                               name="one_anticipated_verdict_per_state")]


class CausalGuard(models.Model):
    """A CPL guard (paper 001) declared once for the workspace: a multi-agent session's choice
    event names it in ``data.choice`` and the MSC page evaluates it there.  ``owner`` is the
    lifeline that decides it; empty means any lifeline whose choice event names it."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE,
                                  related_name="causal_guards")
    name = models.CharField(max_length=100)
    cpl = models.TextField()
    owner = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "name"],
                                               name="causal_guard_name_unique_in_workspace")]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
