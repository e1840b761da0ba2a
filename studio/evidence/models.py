"""Review evidence: a rule's test cases, and the impact checks of its versions on stored
sessions (each an audit run of the new version beside the approved one)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studio.audits.models import AuditRun
from studio.rules.models import Rule, RuleVersion
from studio.traces.models import Upload
from studio.workspaces.models import Workspace


class Expectation(models.TextChoices):
    VIOLATE = "violate", "must violate"
    COMPLY = "comply", "must comply"


class RuleCase(models.Model):
    """An example session that pins a rule's meaning (``studio.logic.cases``): its steps, each
    ``{"atoms": [...], "data": {path: value}}``, and what every version of the rule must say of
    it.  ``source`` says where it came from: ``{"kind": "hand"}``, ``{"kind": "session",
    "session_id", "session", "from_step", "to_step"}``, ``{"kind": "trace", "version",
    "which"}`` or ``{"kind": "library"}``.  ``changes`` keeps every change made to it, oldest
    first (also in the workspace's audit log): a case changed to let a version through is
    visible as such."""

    rule = models.ForeignKey(Rule, on_delete=models.CASCADE, related_name="cases")
    name = models.CharField(max_length=200)
    expect = models.CharField(max_length=10, choices=Expectation.choices)
    at_step = models.PositiveIntegerField(null=True, blank=True)
    steps = models.JSONField(default=list)
    source = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    changes = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["rule_id", "id"]


class ImpactScope(models.TextChoices):
    ALL = "all"
    UPLOAD = "upload"
    SAMPLE = "sample"


class ImpactCheck(models.Model):
    """What a version would change on stored sessions: ``run`` audits them with the version
    and the rule's approved version (``baseline``; none when the rule has none yet) together;
    ``summary`` is the comparison, computed once the run is done."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    version = models.ForeignKey(RuleVersion, on_delete=models.CASCADE,
                                related_name="impact_checks")
    baseline = models.ForeignKey(RuleVersion, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+")
    run = models.OneToOneField(AuditRun, on_delete=models.CASCADE, related_name="impact_check")
    scope = models.CharField(max_length=10, choices=ImpactScope.choices,
                             default=ImpactScope.ALL)
    upload = models.ForeignKey(Upload, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="+")
    sample_size = models.PositiveIntegerField(null=True, blank=True)
    sessions_available = models.PositiveIntegerField(default=0)
    # The draft's formula and counting when checked: a draft edited since makes the check stale.
    formula = models.TextField(blank=True)
    counting = models.CharField(max_length=20, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    summary = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
