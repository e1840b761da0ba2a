from django.contrib import admin

from .models import ImpactCheck, RuleCase


@admin.register(RuleCase)
class RuleCaseAdmin(admin.ModelAdmin):
    """Read-only: cases change through the evidence services, which record every change."""

    list_display = ("id", "rule", "name", "expect", "at_step", "created_at")
    list_filter = ("expect",)
    readonly_fields = tuple(f.name for f in RuleCase._meta.fields)


@admin.register(ImpactCheck)
class ImpactCheckAdmin(admin.ModelAdmin):
    list_display = ("id", "workspace", "version", "baseline", "run", "scope", "created_at")
    list_filter = ("scope",)
    readonly_fields = tuple(f.name for f in ImpactCheck._meta.fields)
