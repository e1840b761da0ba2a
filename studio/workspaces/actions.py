"""Every action the workspace audit log records, as one enumeration.

The values are the strings stored in ``AuditLogEntry.action`` (and shown in exports and the
audit report), so they never change; ``workspaces.services.record`` refuses anything else, so a
new kind of entry is added here first.  The model field keeps no ``choices`` so that adding an
action needs no migration.  Each member carries a short English label, what the audit-log page
and its CSV show a compliance officer (labels may be reworded; values may not).
"""

from __future__ import annotations

from django.db import models


class LogAction(models.TextChoices):
    AUDIT_FAILED = "audit.failed", "Audit failed"
    AUDIT_FINISHED = "audit.finished", "Audit finished"
    AUDIT_REQUEUED = "audit.requeued", "Audit queued again"
    AUDIT_RESUMED = "audit.resumed", "Audit resumed"
    AUDIT_STARTED = "audit.started", "Audit started"

    CAUSAL_GUARD_CREATED = "causal_guard.created", "Causal guard declared"
    CAUSAL_GUARD_DELETED = "causal_guard.deleted", "Causal guard deleted"
    CAUSAL_GUARD_UPDATED = "causal_guard.updated", "Causal guard changed"

    GROUND_TRUTH_IMPORTED = "ground_truth.imported", "Ground truth imported"

    GUARD_APPROVED = "guard.approved", "Guarded step approved by a person"
    GUARD_ASKED_HUMAN = "guard.asked_human", "Guard asked a person"
    GUARD_DENIED = "guard.denied", "Guarded step denied by a person"
    GUARD_TIMED_OUT = "guard.timed_out", "Nobody answered the guard in time"

    GUARD_POLICY_SET = "guard_policy.set", "Guard policy changed"
    GUARD_PREDICATES_SET = "guard_predicates.set", "Risk model predicates changed"

    INVITATION_ACCEPTED = "invitation.accepted", "Invitation accepted"
    INVITATION_CREATED = "invitation.created", "Person invited"
    INVITATION_REVOKED = "invitation.revoked", "Invitation revoked"

    LABEL_CORRECTED = "label.corrected", "Label corrected"
    LABEL_CORRECTION_REMOVED = "label.correction_removed", "Label correction removed"

    LABELER_CREATED = "labeler.created", "Labeler created"
    LABELER_DELETED = "labeler.deleted", "Labeler deleted"
    LABELER_UPDATED = "labeler.updated", "Labeler changed"

    LIVE_SESSION_ENDED = "live_session.ended", "Live session ended"

    LLM_ENDPOINT_REMOVED = "llm_endpoint.removed", "LLM endpoint removed"
    LLM_ENDPOINT_SET = "llm_endpoint.set", "LLM endpoint set"

    MEMBER_ADDED = "member.added", "Member added"
    MEMBER_REMOVED = "member.removed", "Member removed"
    MEMBER_ROLES_CHANGED = "member.roles_changed", "Member's roles changed"

    RISK_MODEL_REQUESTED = "risk_model.requested", "Risk model asked for"

    RULE_CREATED = "rule.created", "Rule created"
    RULE_UPDATED = "rule.updated", "Rule changed"

    RULE_CASE_CHANGED = "rule_case.changed", "Rule test case changed"
    RULE_CASE_CREATED = "rule_case.created", "Rule test case created"
    RULE_CASE_DELETED = "rule_case.deleted", "Rule test case deleted"
    RULE_CASE_ERASED = "rule_case.erased", "Rule test case erased"

    RULE_LIBRARY_INSTALLED = "rule_library.installed", "Rules installed from the library"

    RULE_SET_CREATED = "rule_set.created", "Rule set created"
    RULE_SET_DELETED = "rule_set.deleted", "Rule set deleted"
    RULE_SET_LIVE = "rule_set.live", "Rule set made live"
    RULE_SET_NOT_LIVE = "rule_set.not_live", "Rule set no longer live"
    RULE_SET_RULES_SET = "rule_set.rules_set", "Rules of a rule set changed"
    RULE_SET_UPDATED = "rule_set.updated", "Rule set renamed or described"

    RULE_VERSION_APPROVED = "rule_version.approved", "Rule version approved"
    RULE_VERSION_CASES_CHECKED = "rule_version.cases_checked", "Rule version checked on its cases"
    RULE_VERSION_CREATED = "rule_version.created", "Rule version drafted"
    RULE_VERSION_IMPACT_STARTED = "rule_version.impact_started", "Impact check started"
    RULE_VERSION_REJECTED = "rule_version.rejected", "Rule version rejected"
    RULE_VERSION_SUBMITTED = "rule_version.submitted", "Rule version submitted for review"
    RULE_VERSION_UPDATED = "rule_version.updated", "Rule version draft changed"

    SESSION_ERASED = "session.erased", "Session erased"

    TOKEN_CREATED = "token.created", "Token created"
    TOKEN_REVOKED = "token.revoked", "Token revoked"

    UPLOAD_AUDIT_NOT_STARTED = "upload.audit_not_started", "Audit of an upload not started"
    UPLOAD_CREATED = "upload.created", "Log uploaded"
    UPLOAD_ERASED = "upload.erased", "Upload erased"
    UPLOAD_FAILED = "upload.failed", "Upload could not be read"
    UPLOAD_PARSED = "upload.parsed", "Upload read"
    UPLOAD_RESUMED = "upload.resumed", "Upload resumed"

    WEBHOOK_SECRET_CREATED = "webhook_secret.created", "Webhook secret created"
    WEBHOOK_SECRET_REVOKED = "webhook_secret.revoked", "Webhook secret revoked"

    WORKSPACE_CREATED = "workspace.created", "Workspace created"
    WORKSPACE_RETENTION_CHANGED = "workspace.retention_changed", "How long events are kept changed"


def action_label(value: str) -> str:
    """The words for a stored action; the stored string itself for one no longer declared."""
    try:
        return LogAction(value).label
    except ValueError:
        return value
