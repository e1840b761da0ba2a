"""Audit tasks: one per batch of sessions; ids in, the service does the work."""

import random
import time

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from studio.audits import services


def _backoff(retries: int) -> float:
    return min(120, 2 ** (retries + 1)) * random.uniform(0.5, 1.0)


# acks_late + reject_on_worker_lost: a batch whose worker dies (SIGKILL, OOM, the time limit) is
# delivered again; the service counts attempts and gives up past AUDIT_MAX_ATTEMPTS, which also
# ends the retries of an attempt that failed (hence no max_retries here).  A lost database
# connection spends no attempt: the batch is retried, with a growing delay, until the database
# has been away for AUDIT_STALL_SECONDS (``lost_since``, seconds since the epoch, carried from
# retry to retry); after that its attempts count again, so a fault that only looks like a lost
# connection still ends.
@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def run_audit_batch(self, batch_id: int, lost_since: float | None = None) -> str:
    eager_retries = 0
    while True:
        lost = lost_since is not None and time.time() - lost_since < settings.AUDIT_STALL_SECONDS
        try:
            return services.run_batch(batch_id, after_lost_connection=lost)
        except services.BatchRetry as exc:
            lost_since = None
            if self.request.is_eager:
                continue  # in-process, no broker: again at once; the attempts cap ends it
            raise self.retry(exc=exc, countdown=_backoff(self.request.retries),
                             kwargs={"batch_id": batch_id}) from exc
        except (OperationalError, InterfaceError) as exc:
            if lost_since is None:  # the outage starts now (this attempt was spent)
                lost_since = time.time()
            if self.request.is_eager:  # in-process: wait here, a little longer each time
                time.sleep(min(1.0, 0.01 * 2 ** eager_retries))
                eager_retries += 1
                continue
            raise self.retry(exc=exc, countdown=_backoff(self.request.retries),
                             kwargs={"batch_id": batch_id, "lost_since": lost_since}) from exc


@shared_task
def requeue_stalled_work() -> dict:
    """Beat's sweeper (settings.CELERY_BEAT_SCHEDULE): work whose task a broker lost."""
    from studio.traces.services import requeue_stalled_uploads

    return {"audits": services.requeue_stalled_audits(), "uploads": requeue_stalled_uploads()}
