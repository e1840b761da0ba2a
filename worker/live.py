"""Live-session tasks: beat's sweeper that ends sessions left idle; the service does the work."""

from celery import shared_task

from studio.live.ending import end_idle_sessions


@shared_task
def end_idle_live_sessions() -> int:
    """Beat (settings.CELERY_BEAT_SCHEDULE): end the live sessions idle past their workspace's
    ``live_inactivity_minutes``, so they get their end verdicts."""
    return end_idle_sessions()
