"""Audit and ground-truth pages (mounted at the site root by studio/web/urls.py)."""

from django.urls import path

from . import views

urlpatterns = [
    path("w/<slug:slug>/audits/", views.audit_list, name="audits"),
    path("w/<slug:slug>/audits/start", views.audit_start, name="audit_start"),
    path("w/<slug:slug>/audits/<int:audit_id>/", views.audit_report, name="audit"),
    path("w/<slug:slug>/audits/<int:audit_id>/report.csv", views.audit_csv, name="audit_csv"),
    path("w/<slug:slug>/audits/<int:audit_id>/violations.csv", views.audit_violations_csv,
         name="audit_violations_csv"),
    path("w/<slug:slug>/audits/<int:audit_id>/report.json", views.audit_json,
         name="audit_json"),
    path("w/<slug:slug>/audits/<int:audit_id>/evidence", views.audit_evidence,
         name="audit_evidence"),
    path("w/<slug:slug>/ground-truth/", views.ground_truth, name="ground_truth"),
]
