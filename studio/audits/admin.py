from django.contrib import admin

from .models import AuditBatch, AuditRun, SessionResult, ViolationRecord


@admin.register(AuditRun)
class AuditRunAdmin(admin.ModelAdmin):
    """Read-only: runs change only through the audit services."""

    list_display = ("id", "workspace", "rule_set", "upload", "status", "sessions_done",
                    "sessions_total", "batches_done", "batches_total", "created_at")
    list_filter = ("status",)
    readonly_fields = tuple(f.name for f in AuditRun._meta.fields) + ("rule_versions",)


@admin.register(AuditBatch)
class AuditBatchAdmin(admin.ModelAdmin):
    list_display = ("id", "run", "index", "status", "attempts", "started_at", "finished_at")
    list_filter = ("status",)
    raw_id_fields = ("run",)
    readonly_fields = tuple(f.name for f in AuditBatch._meta.fields)


@admin.register(SessionResult)
class SessionResultAdmin(admin.ModelAdmin):
    list_display = ("id", "run", "session", "rule_version", "verdict", "final",
                    "violation_count")
    list_filter = ("verdict", "final")
    raw_id_fields = ("run", "batch", "session", "rule_version")


@admin.register(ViolationRecord)
class ViolationRecordAdmin(admin.ModelAdmin):
    list_display = ("id", "result", "trigger", "detected", "at_end")
    raw_id_fields = ("result",)
