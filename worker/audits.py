"""Audit tasks: one per batch of sessions; ids in, the service does the work."""

import random

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from studio.audits import services


def _backoff(retries: int) -> float:
    return min(120, 2 ** (retries + 1)) * random.uniform(0.5, 1.0)


# acks_late + reject_on_worker_lost: a batch whose worker dies (SIGKILL, OOM, the time limit) is
# delivered again; the service counts attempts and gives up past AUDIT_MAX_ATTEMPTS.  An attempt
# that failed, or a database briefly away, is retried later with a growing delay.
@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True,
             max_retries=settings.AUDIT_MAX_ATTEMPTS + 5)
def run_audit_batch(self, batch_id: int) -> str:
    while True:
        try:
            return services.run_batch(batch_id)
        except services.BatchRetry as exc:
            if self.request.is_eager:
                continue  # in-process, no broker: again at once; the attempts cap ends it
            raise self.retry(exc=exc, countdown=_backoff(self.request.retries)) from exc
        except (OperationalError, InterfaceError) as exc:
            if self.request.is_eager:
                raise
            raise self.retry(exc=exc, countdown=_backoff(self.request.retries)) from exc


@shared_task
def requeue_stalled_work() -> dict:
    """Beat's sweeper (settings.CELERY_BEAT_SCHEDULE): work whose task a broker lost."""
    from studio.traces.services import requeue_stalled_uploads

    return {"audits": services.requeue_stalled_audits(), "uploads": requeue_stalled_uploads()}
