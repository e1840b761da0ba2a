"""Retention: beat's task that erases what a workspace keeps no longer; the service does the work."""

from celery import shared_task

from studio.traces import erasure


@shared_task
def apply_retention() -> int:
    """Beat (settings.CELERY_BEAT_SCHEDULE): erase the uploads and live sessions older than
    their workspace's ``retention_days``; returns how many were erased."""
    return erasure.apply_retention()
