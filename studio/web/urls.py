from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import live_pages, views
from .signin import SignInView

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("w/<slug:slug>/", views.workspace, name="workspace"),
    path("", include("studio.rules.urls")),
    path("", include("studio.traces.page_urls")),
    path("", include("studio.traces.session_urls")),
    path("", include("studio.audits.urls")),
    path("", include("studio.evidence.urls")),
    path("w/<slug:slug>/live/", live_pages.live, name="live"),
    path("w/<slug:slug>/live/rows", live_pages.live_rows, name="live_rows"),
    path("", include("studio.guard.page_urls")),
    path("", include("studio.workspaces.urls")),
]
