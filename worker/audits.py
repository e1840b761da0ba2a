"""Audit tasks: one per batch of sessions; ids in, the service does the work."""

import time

from celery import shared_task

from studio.audits import services
from studio.connections import LOST_CONNECTION, retry_delay, run_until_done, within_outage


# acks_late + reject_on_worker_lost: a batch whose worker dies (SIGKILL, OOM, the time limit) is
# delivered again; the service counts attempts and gives up past AUDIT_MAX_ATTEMPTS, which also
# ends the retries of an attempt that failed (hence no max_retries here).  A lost database
# connection spends no attempt (studio.connections): the batch is retried, with a growing delay,
# until the database has been away for AUDIT_STALL_SECONDS (``lost_since``, seconds since the
# epoch, carried from retry to retry); after that its attempts count again.
@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def run_audit_batch(self, batch_id: int, lost_since: float | None = None) -> str:
    def run(after_lost_connection: bool) -> str:
        return services.run_batch(batch_id, after_lost_connection=after_lost_connection)

    if self.request.is_eager:  # no broker to retry through
        return run_until_done(run, again=(services.BatchRetry,), lost_since=lost_since)
    try:
        return run(within_outage(lost_since))
    except services.BatchRetry as exc:
        raise self.retry(exc=exc, countdown=retry_delay(self.request.retries),
                         kwargs={"batch_id": batch_id}) from exc
    except LOST_CONNECTION as exc:  # this attempt was spent
        since = time.time() if lost_since is None else lost_since
        raise self.retry(exc=exc, countdown=retry_delay(self.request.retries),
                         kwargs={"batch_id": batch_id, "lost_since": since}) from exc


@shared_task
def requeue_stalled_work() -> dict:
    """Beat's sweeper (settings.CELERY_BEAT_SCHEDULE): work whose task a broker lost."""
    from studio.traces.intake import requeue_stalled_uploads

    return {"audits": services.requeue_stalled_audits(), "uploads": requeue_stalled_uploads()}
