from django.apps import AppConfig


class AuditsConfig(AppConfig):
    name = "studio.audits"
    label = "audits"
    verbose_name = "Audits"
