from django.apps import AppConfig


class EvidenceConfig(AppConfig):
    name = "studio.evidence"
    label = "evidence"
    verbose_name = "Review evidence"
