"""Review evidence pages (mounted at the site root by studio/web/urls.py)."""

from django.urls import path

from . import views

urlpatterns = [
    path("w/<slug:slug>/rules/<int:rule_id>/cases", views.rule_cases, name="rule_cases"),
    path("w/<slug:slug>/rules/<int:rule_id>/impact", views.version_impact,
         name="version_impact"),
    path("w/<slug:slug>/audits/compare", views.compare_runs, name="audit_compare"),
]
