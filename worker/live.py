"""Live-session tasks: beat's sweeper that ends sessions left idle, and anticipation searched
off the request path (studio.live.anticipation); the services do the work."""

from celery import shared_task

from studio.live import anticipation
from studio.live.ending import end_idle_sessions


@shared_task
def end_idle_live_sessions() -> int:
    """Beat (settings.CELERY_BEAT_SCHEDULE): end the live sessions idle past their workspace's
    ``live_inactivity_minutes``, so they get their end verdicts."""
    return end_idle_sessions()


# A lost search costs only a repeat (a request asks again within a minute): at most once.
@shared_task(acks_late=False)
def anticipate_state(formula: str, residual: str, memory: list | None, context: list) -> str:
    """Decide one monitor state's anticipatory verdict a request met undecided."""
    return anticipation.decide_state(formula, residual, memory, context)


@shared_task(acks_late=False)
def warm_anticipation(workspace_id: int) -> int:
    """Search the first states of the workspace's live rules ahead of requests."""
    return anticipation.warm_now(workspace_id)
