"""Pages for people, credentials and the audit log (mounted at the site root by
studio/web/urls.py)."""

from django.urls import path

from . import invitation_pages, log_views, views

urlpatterns = [
    path("w/<slug:slug>/members/", views.members, name="members"),
    path("w/<slug:slug>/members/<str:username>/roles", views.member_roles, name="member_roles"),
    path("w/<slug:slug>/members/<str:username>/remove", views.member_remove,
         name="member_remove"),
    path("w/<slug:slug>/invitations/", views.invitation_create, name="invitation_create"),
    path("w/<slug:slug>/invitations/<int:invitation_id>/revoke", views.invitation_revoke,
         name="invitation_revoke"),
    path("invitations/<str:token>/", invitation_pages.invitation, name="invitation"),
    path("workspaces/new/", views.workspace_new, name="workspace_new"),
    path("w/<slug:slug>/tokens/", views.tokens, name="tokens"),
    path("w/<slug:slug>/tokens/<int:token_id>/revoke", views.token_revoke, name="token_revoke"),
    path("w/<slug:slug>/webhook-secrets/", views.webhook_secrets, name="webhook_secrets"),
    path("w/<slug:slug>/webhook-secrets/<int:secret_id>/revoke", views.webhook_secret_revoke,
         name="webhook_secret_revoke"),
    path("w/<slug:slug>/settings/llm/", views.llm_settings, name="llm_settings"),
    path("w/<slug:slug>/settings/llm/remove", views.llm_settings_remove,
         name="llm_settings_remove"),
    path("w/<slug:slug>/log/", log_views.log_page, name="workspace_log"),
    path("w/<slug:slug>/log/entries.csv", log_views.log_csv, name="workspace_log_csv"),
]
