from django.contrib import admin

from .models import Event, TraceSession, Upload, UploadError


@admin.register(Upload)
class UploadAdmin(admin.ModelAdmin):
    list_display = ("id", "workspace", "filename", "format", "status", "lines_total",
                    "lines_bad", "events_stored", "created_at")
    list_filter = ("status", "format")
    search_fields = ("filename", "sha256")
    readonly_fields = tuple(f.name for f in Upload._meta.fields)


@admin.register(UploadError)
class UploadErrorAdmin(admin.ModelAdmin):
    list_display = ("upload", "line", "pointer", "reason")
    raw_id_fields = ("upload",)


@admin.register(TraceSession)
class TraceSessionAdmin(admin.ModelAdmin):
    list_display = ("id", "workspace", "external_id", "source", "steps", "created_at")
    search_fields = ("external_id",)


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ("id", "session", "step", "source", "lifeline", "upload")
    raw_id_fields = ("session", "upload", "workspace")
