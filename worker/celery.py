import os
from pathlib import Path

from celery import Celery
from celery.signals import beat_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

app = Celery("studio")
# Every Celery setting lives in Django settings as CELERY_<NAME>, next to what it depends on.
app.config_from_object("django.conf:settings", namespace="CELERY")
# tasks.py of every installed Django app, plus worker/tasks.py where the thin tasks live.
app.autodiscover_tasks()
app.autodiscover_tasks(["worker"])


@beat_init.connect
def _make_schedule_folder(sender=None, **kwargs):
    # Beat keeps its schedule in a file under var/, which a fresh checkout does not have.
    Path(app.conf.beat_schedule_filename).parent.mkdir(parents=True, exist_ok=True)
