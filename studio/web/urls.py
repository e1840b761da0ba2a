from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import (live_pages, message_chart_pages, session_list_page, session_pages, upload_pages,
               views)
from .signin import SignInView

# Pages that read several apps live here; the rest are each app's own.
upload_urls = [
    path("w/<slug:slug>/uploads/", upload_pages.upload_list, name="uploads"),
    path("w/<slug:slug>/uploads/<int:upload_id>/", upload_pages.upload_detail, name="upload"),
    path("w/<slug:slug>/uploads/<int:upload_id>/progress", upload_pages.upload_progress,
         name="upload_progress"),
    path("w/<slug:slug>/uploads/<int:upload_id>/errors.csv", upload_pages.upload_errors_csv,
         name="upload_errors"),
    path("w/<slug:slug>/uploads/<int:upload_id>/audit", upload_pages.upload_audit,
         name="upload_audit"),
    path("w/<slug:slug>/uploads/<int:upload_id>/erase", upload_pages.upload_erase,
         name="upload_erase"),
    path("w/<slug:slug>/uploads/<int:upload_id>/resume", upload_pages.upload_resume,
         name="upload_resume"),
    path("w/<slug:slug>/audits/<int:audit_id>/progress", upload_pages.audit_progress,
         name="audit_progress"),
]

# The session list, one session, the htmx partial of its residual panel, the form that
# corrects a label of one of its steps, and its message sequence chart.
session_urls = [
    path("w/<slug:slug>/sessions/", session_list_page.session_list, name="sessions"),
    path("w/<slug:slug>/sessions/<int:session_id>/", session_pages.session_detail,
         name="session"),
    path("w/<slug:slug>/sessions/<int:session_id>/residual", session_pages.session_residual,
         name="session_residual"),
    path("w/<slug:slug>/sessions/<int:session_id>/labels", session_pages.session_correct_label,
         name="session_correct_label"),
    path("w/<slug:slug>/sessions/<int:session_id>/msc", message_chart_pages.session_msc,
         name="session_msc"),
]

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("w/<slug:slug>/", views.workspace, name="workspace"),
    path("", include("studio.rules.urls")),
    *upload_urls,
    *session_urls,
    path("", include("studio.audits.urls")),
    path("", include("studio.evidence.urls")),
    path("w/<slug:slug>/live/", live_pages.live, name="live"),
    path("w/<slug:slug>/live/rows", live_pages.live_rows, name="live_rows"),
    path("", include("studio.guard.page_urls")),
    path("", include("studio.workspaces.urls")),
]
