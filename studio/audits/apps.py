from django.apps import AppConfig


class AuditsConfig(AppConfig):
    name = "studio.audits"
    label = "audits"
    verbose_name = "Audits"

    def ready(self):
        # Traces sits below audits: what auditing offers uploads and erasures is handed to it.
        from studio.traces import erasure, intake as upload_intake

        from .erasure import AuditErasure
        from .intake import UploadAuditing

        upload_intake.register_auditing(UploadAuditing())
        erasure.register_participant(AuditErasure())
