"""Upload tasks: the id in, the service does the work."""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from studio.traces import services


# acks_late + reject_on_worker_lost: a parse whose worker dies is delivered again and resumes
# after the last loaded batch (the service keeps a checkpoint and caps the attempts).  A database
# that is briefly away is retried with a growing delay.
@shared_task(acks_late=True, reject_on_worker_lost=True,
             autoretry_for=(OperationalError, InterfaceError), retry_backoff=2,
             retry_backoff_max=120, retry_jitter=True, max_retries=5)
def parse_upload_task(upload_id: int) -> str:
    upload = services.parse_upload(upload_id)
    return upload.status if upload is not None else "missing"


# After an erasure the vocabulary's counts are recounted from the events left (its examples were
# emptied in the erasure's own transaction, so no erased value stays in them).
@shared_task(acks_late=True, reject_on_worker_lost=True,
             autoretry_for=(OperationalError, InterfaceError), retry_backoff=2,
             retry_backoff_max=120, retry_jitter=True, max_retries=5)
def rebuild_vocabulary_task(workspace_id: int) -> int:
    from studio.traces import vocabulary
    from studio.workspaces.models import Workspace

    workspace = Workspace.objects.filter(pk=workspace_id).first()
    return vocabulary.rebuild(workspace) if workspace is not None else 0
