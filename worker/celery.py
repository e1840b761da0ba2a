import os
from pathlib import Path

from celery.signals import beat_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

# The one Celery app, made (and configured from Django settings) where the apps enqueue by name.
from studio.tasks import app  # noqa: E402 - after the settings module is named

__all__ = ["app"]


@beat_init.connect
def _make_schedule_folder(sender=None, **kwargs):
    # Beat keeps its schedule in a file under var/, which a fresh checkout does not have.
    Path(app.conf.beat_schedule_filename).parent.mkdir(parents=True, exist_ok=True)
