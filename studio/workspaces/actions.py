"""Every action the workspace audit log records, as one enumeration.

The values are the strings stored in ``AuditLogEntry.action`` (and shown in exports and the
audit report), so they never change; ``workspaces.services.record`` refuses anything else, so a
new kind of entry is added here first.  The model field keeps no ``choices`` so that adding an
action needs no migration.
"""

from __future__ import annotations

from django.db import models


class LogAction(models.TextChoices):
    AUDIT_FAILED = "audit.failed"
    AUDIT_FINISHED = "audit.finished"
    AUDIT_REQUEUED = "audit.requeued"
    AUDIT_RESUMED = "audit.resumed"
    AUDIT_STARTED = "audit.started"

    CAUSAL_GUARD_CREATED = "causal_guard.created"
    CAUSAL_GUARD_DELETED = "causal_guard.deleted"
    CAUSAL_GUARD_UPDATED = "causal_guard.updated"

    GROUND_TRUTH_IMPORTED = "ground_truth.imported"

    GUARD_APPROVED = "guard.approved"
    GUARD_ASKED_HUMAN = "guard.asked_human"
    GUARD_DENIED = "guard.denied"
    GUARD_TIMED_OUT = "guard.timed_out"

    GUARD_POLICY_SET = "guard_policy.set"

    INVITATION_ACCEPTED = "invitation.accepted"
    INVITATION_CREATED = "invitation.created"
    INVITATION_REVOKED = "invitation.revoked"

    LABEL_CORRECTED = "label.corrected"
    LABEL_CORRECTION_REMOVED = "label.correction_removed"

    LABELER_CREATED = "labeler.created"
    LABELER_DELETED = "labeler.deleted"
    LABELER_UPDATED = "labeler.updated"

    LIVE_SESSION_ENDED = "live_session.ended"

    LLM_ENDPOINT_REMOVED = "llm_endpoint.removed"
    LLM_ENDPOINT_SET = "llm_endpoint.set"

    MEMBER_ADDED = "member.added"
    MEMBER_REMOVED = "member.removed"
    MEMBER_ROLES_CHANGED = "member.roles_changed"

    RISK_MODEL_REQUESTED = "risk_model.requested"

    RULE_CREATED = "rule.created"
    RULE_UPDATED = "rule.updated"

    RULE_CASE_CHANGED = "rule_case.changed"
    RULE_CASE_CREATED = "rule_case.created"
    RULE_CASE_DELETED = "rule_case.deleted"
    RULE_CASE_ERASED = "rule_case.erased"

    RULE_LIBRARY_INSTALLED = "rule_library.installed"

    RULE_SET_CREATED = "rule_set.created"
    RULE_SET_DELETED = "rule_set.deleted"
    RULE_SET_LIVE = "rule_set.live"
    RULE_SET_NOT_LIVE = "rule_set.not_live"
    RULE_SET_RULES_SET = "rule_set.rules_set"
    RULE_SET_UPDATED = "rule_set.updated"

    RULE_VERSION_APPROVED = "rule_version.approved"
    RULE_VERSION_CASES_CHECKED = "rule_version.cases_checked"
    RULE_VERSION_CREATED = "rule_version.created"
    RULE_VERSION_IMPACT_STARTED = "rule_version.impact_started"
    RULE_VERSION_REJECTED = "rule_version.rejected"
    RULE_VERSION_SUBMITTED = "rule_version.submitted"
    RULE_VERSION_UPDATED = "rule_version.updated"

    SESSION_ERASED = "session.erased"

    TOKEN_CREATED = "token.created"
    TOKEN_REVOKED = "token.revoked"

    UPLOAD_AUDIT_NOT_STARTED = "upload.audit_not_started"
    UPLOAD_CREATED = "upload.created"
    UPLOAD_ERASED = "upload.erased"
    UPLOAD_FAILED = "upload.failed"
    UPLOAD_PARSED = "upload.parsed"
    UPLOAD_RESUMED = "upload.resumed"

    WEBHOOK_SECRET_CREATED = "webhook_secret.created"
    WEBHOOK_SECRET_REVOKED = "webhook_secret.revoked"

    WORKSPACE_CREATED = "workspace.created"
    WORKSPACE_RETENTION_CHANGED = "workspace.retention_changed"
