# Importing the package creates the Celery app, so `@shared_task`s bind to it and
# `celery -A worker` finds it.
from worker.celery import app as celery_app

__all__ = ["celery_app"]
