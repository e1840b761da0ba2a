from django.apps import AppConfig


class EvidenceConfig(AppConfig):
    name = "studio.evidence"
    label = "evidence"
    verbose_name = "Review evidence"

    def ready(self):
        # After the audits' participant (INSTALLED_APPS order): it reads what their survey found.
        from studio.traces.erasure import register_participant

        from .erasure import EvidenceErasure

        register_participant(EvidenceErasure())
