"""Page routes (mounted by studio/web/urls.py): the session list, one session, the htmx
partial of its residual panel, and the form that corrects a label of one of its steps."""

from django.urls import path

from . import msc_views, session_views

urlpatterns = [
    path("w/<slug:slug>/sessions/", session_views.session_list, name="sessions"),
    path("w/<slug:slug>/sessions/<int:session_id>/", session_views.session_detail,
         name="session"),
    path("w/<slug:slug>/sessions/<int:session_id>/residual", session_views.session_residual,
         name="session_residual"),
    path("w/<slug:slug>/sessions/<int:session_id>/labels", session_views.session_correct_label,
         name="session_correct_label"),
    path("w/<slug:slug>/sessions/<int:session_id>/msc", msc_views.session_msc,
         name="session_msc"),
]
