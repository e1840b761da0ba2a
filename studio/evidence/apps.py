from django.apps import AppConfig


class EvidenceConfig(AppConfig):
    name = "studio.evidence"
    label = "evidence"
    verbose_name = "Review evidence"

    def ready(self):
        # Rules reads its reviews' evidence through the protocol it defines (it is below us).
        from studio.rules.evidence import supply

        from .review import CasesAndImpact

        supply(CasesAndImpact())
