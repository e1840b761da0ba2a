"""Guard tasks: learning a risk model (on its own queue, settings.GUARD_MODEL_QUEUE), and beat's
sweep of models whose worker was lost; ids in, the service does the work."""

from celery import shared_task

from studio.guard import learning
from studio.guard.models import LearnedRiskModel
from studio.live import anticipation


# At most once (not acknowledged late): a worker lost while learning leaves the record running,
# and the service takes it as failed after GUARD_MODEL_STALL_SECONDS (learning.mark_stalled),
# queueing the follow-up it carried; learning again is cheap to ask for, and a model that kills
# its worker is not retried forever.  Its time limits are given when it is sent
# (learning._enqueue), from settings.GUARD_MODEL_TIME_LIMIT.
@shared_task(acks_late=False)
def learn_risk_model(record_id: int) -> str:
    status = learning.learn_model(record_id)
    if status == "ready":
        # The live rules' first states searched ahead too (issue 27, item 4), off any request.
        workspace_id = (LearnedRiskModel.objects.filter(pk=record_id)
                        .values_list("workspace_id", flat=True).first())
        if workspace_id is not None:
            anticipation.warm_workspace(workspace_id)
    return status


@shared_task
def expire_stalled_risk_models() -> int:
    """Beat's sweep (settings.CELERY_BEAT_SCHEDULE): models whose task was lost."""
    return learning.expire_stalled()
