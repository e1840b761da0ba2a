"""Guard tasks: learning a risk model; the id in, the service does the work."""

from celery import shared_task

from studio.guard import learning


# At most once (not acknowledged late): a worker lost while learning leaves the record running,
# and the service takes it as failed after GUARD_MODEL_STALL_SECONDS (learning.mark_stalled);
# learning again is cheap to ask for, and a model that kills its worker is not retried forever.
@shared_task(acks_late=False)
def learn_risk_model(record_id: int) -> str:
    return learning.learn_model(record_id)
