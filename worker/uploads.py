"""Upload tasks: the id in, the service does the work."""

import time

from celery import shared_task
from django.db import InterfaceError, OperationalError

from studio.audits.intake import observe_upload
from studio.connections import LOST_CONNECTION, retry_delay, run_until_done, within_outage
from studio.traces import loading


# acks_late + reject_on_worker_lost: a parse whose worker dies is delivered again and resumes
# after the last loaded batch (the service keeps a checkpoint and caps the attempts).  Lost
# database connections (studio.connections): the service itself writes the batch in hand again
# on a new connection while the database comes back within UPLOAD_RECONNECT_SECONDS; past that
# the task is retried without spending an attempt until the database has been away for
# AUDIT_STALL_SECONDS (``lost_since``, seconds since the epoch).  The audit the upload asked
# for follows the load (observe_upload).
@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def parse_upload_task(self, upload_id: int, lost_since: float | None = None) -> str:
    def parse(after_lost_connection: bool):
        return loading.parse_upload(upload_id, after_lost_connection, observe=observe_upload)

    if self.request.is_eager:  # no broker to retry through
        upload = run_until_done(parse, lost_since=lost_since)
    else:
        try:
            upload = parse(within_outage(lost_since))
        except LOST_CONNECTION as exc:
            since = time.time() if lost_since is None else lost_since
            raise self.retry(exc=exc, countdown=retry_delay(self.request.retries),
                             kwargs={"upload_id": upload_id, "lost_since": since}) from exc
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
