from django.apps import AppConfig


class TracesConfig(AppConfig):
    name = "studio.traces"
    label = "traces"
    default_auto_field = "django.db.models.BigAutoField"
