"""Page routes (mounted by studio/web/urls.py): log uploads and the progress of their audits."""

from django.urls import path

from . import views

urlpatterns = [
    path("w/<slug:slug>/uploads/", views.upload_list, name="uploads"),
    path("w/<slug:slug>/uploads/<int:upload_id>/", views.upload_detail, name="upload"),
    path("w/<slug:slug>/uploads/<int:upload_id>/progress", views.upload_progress,
         name="upload_progress"),
    path("w/<slug:slug>/uploads/<int:upload_id>/errors.csv", views.upload_errors_csv,
         name="upload_errors"),
    path("w/<slug:slug>/uploads/<int:upload_id>/audit", views.upload_audit, name="upload_audit"),
    path("w/<slug:slug>/uploads/<int:upload_id>/erase", views.upload_erase, name="upload_erase"),
    path("w/<slug:slug>/uploads/<int:upload_id>/resume", views.upload_resume,
         name="upload_resume"),
    path("w/<slug:slug>/audits/<int:audit_id>/progress", views.audit_progress,
         name="audit_progress"),
]
