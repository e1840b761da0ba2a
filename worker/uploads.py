"""Upload tasks: the id in, the service does the work."""

import time

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from studio.traces import services
from worker.audits import _backoff


# acks_late + reject_on_worker_lost: a parse whose worker dies is delivered again and resumes
# after the last loaded batch (the service keeps a checkpoint and caps the attempts).  Lost
# database connections follow the audits' rule (worker.audits): the service itself writes the
# batch in hand again on a new connection while the database comes back within
# UPLOAD_RECONNECT_SECONDS; past that the task is retried, with a growing delay and without
# spending an attempt, until the database has been away for AUDIT_STALL_SECONDS (``lost_since``,
# seconds since the epoch); after that the attempts count again, so the parse still ends.
@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def parse_upload_task(self, upload_id: int, lost_since: float | None = None) -> str:
    eager_retries = 0
    while True:
        lost = lost_since is not None and time.time() - lost_since < settings.AUDIT_STALL_SECONDS
        try:
            upload = services.parse_upload(upload_id, after_lost_connection=lost)
            return upload.status if upload is not None else "missing"
        except (OperationalError, InterfaceError) as exc:
            if lost_since is None:  # the outage starts now
                lost_since = time.time()
            if self.request.is_eager:  # in-process: wait here, a little longer each time
                time.sleep(min(1.0, 0.01 * 2 ** eager_retries))
                eager_retries += 1
                continue
            raise self.retry(exc=exc, countdown=_backoff(self.request.retries),
                             kwargs={"upload_id": upload_id, "lost_since": lost_since}) from exc


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
