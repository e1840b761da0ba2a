from django.apps import AppConfig


class EvidenceConfig(AppConfig):
    name = "studio.evidence"
    label = "evidence"
    verbose_name = "Review evidence"

    def ready(self):
        # Rules reads its reviews' evidence through the protocol it defines (it is below us).
        from studio.rules.evidence import supply
        # After the audits' participant (INSTALLED_APPS order): it reads what their survey found.
        from studio.traces.erasure import register_participant

        from .erasure import EvidenceErasure
        from .review import CasesAndImpact

        supply(CasesAndImpact())
        register_participant(EvidenceErasure())
