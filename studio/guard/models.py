"""What the guard keeps: a policy per rule set, the risk models learned for the live rules, and
every decision answered to an agent (for idempotency, the human in the loop and the record).

The guard stores no event: an agent's proposal is only a question until it posts the event it
actually took to the events route.
"""

from django.conf import settings
from django.db import models

from studio.rules.models import RuleSet
from studio.workspaces.models import Workspace


class GuardPolicy(models.Model):
    """How the rules of one rule set are guarded: ``studio.risk.guard.Policy`` as JSON."""

    ruleset = models.OneToOneField(RuleSet, on_delete=models.CASCADE,
                                   related_name="guard_policy")
    policy = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")


class ModelPredicates(models.Model):
    """The domain predicates a rule set adds to the risk model's abstract states
    (``studio.risk.predicates``, as a list of their JSON); the model of the live rules reads the
    live rule sets' predicates, in rule set order, each once."""

    ruleset = models.OneToOneField(RuleSet, on_delete=models.CASCADE,
                                   related_name="model_predicates")
    predicates = models.JSONField(default=list)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")


class ModelStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    READY = "ready"
    FAILED = "failed"


class LearnedRiskModel(models.Model):
    """A DTMC learned from the workspace's stored sessions for one list of rule versions (the
    live rules when it was asked for); ``model`` is ``studio.risk.predictor.RiskModel`` as
    data."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE,
                                  related_name="risk_models")
    versions = models.JSONField(default=list)        # [[rule name, version id], ...]
    atoms = models.JSONField(null=True, blank=True)  # the picked atoms; None: all the rules read
    status = models.CharField(max_length=10, choices=ModelStatus.choices,
                              default=ModelStatus.QUEUED)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    sessions = models.PositiveIntegerField(default=0)
    events = models.PositiveIntegerField(default=0)
    states = models.PositiveIntegerField(default=0)
    # Of the sessions learned from: how many an agent ran behind the guard (it asked at least
    # once), and how many proposed steps the guard refused in them (any answer but allow).
    guarded_sessions = models.PositiveIntegerField(default=0)
    refused_steps = models.PositiveIntegerField(default=0)
    model = models.JSONField(null=True, blank=True)
    # The domain predicates it was learned with; its alarms' precision and recall on held-out
    # sessions (``studio.risk.predictor.AlarmQuality``); the predicates proposed from its
    # sessions (``studio.risk.predicates.Proposal``), best first.
    predicates = models.JSONField(default=list, blank=True)
    quality = models.JSONField(null=True, blank=True)
    proposals = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    reason = models.CharField(max_length=200, blank=True)   # why it was learned
    # Asked for while this one runs: learned once it finishes (studio.guard.learning), as
    # {"versions": [...], "reason": ..., "requested_by": user id or None, "again": bool}.
    follow_up = models.JSONField(null=True, blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                     on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "status", "-finished_at"])]


class DecisionStatus(models.TextChoices):
    DECIDED = "decided"
    PENDING = "pending"       # ask_human: waiting for a person
    APPROVED = "approved"
    DENIED = "denied"
    TIMED_OUT = "timed_out"


class GuardDecision(models.Model):
    """One guard answer.  ``decision_id`` is the agent's (or generated): asking again with the
    same id and the same request answers the same decision and decides nothing new."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE,
                                  related_name="guard_decisions")
    session = models.CharField(max_length=200)          # the live session's external id
    decision_id = models.CharField(max_length=100)
    request_hash = models.CharField(max_length=64)
    proposed = models.JSONField()                       # the proposed event, as sent
    answer = models.JSONField()
    decision = models.CharField(max_length=20)
    status = models.CharField(max_length=10, choices=DecisionStatus.choices,
                              default=DecisionStatus.DECIDED)
    expires_at = models.DateTimeField(null=True, blank=True)   # pending: the human's deadline
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True)                 # the person's reason
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["workspace", "session", "decision_id"],
                                               name="one_decision_per_id")]
        indexes = [models.Index(fields=["workspace", "status", "-created_at"])]
