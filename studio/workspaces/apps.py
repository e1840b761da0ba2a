from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "studio.workspaces"
    label = "workspaces"
    default_auto_field = "django.db.models.BigAutoField"
