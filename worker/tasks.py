"""The Celery tasks: thin entry points that take ids and call one service each.

Each concern keeps its tasks in its own module here; this module imports them so the worker's
autodiscovery (``worker.tasks``) registers them all.
"""

from worker import audits, guard, live, retention, uploads  # noqa: F401 - registers the tasks
