"""The Celery tasks: thin entry points that take ids and call one service each.

Each concern keeps its tasks in its own module here; this module imports them so the worker's
autodiscovery (``worker.tasks``) registers them all.
"""

from importlib import import_module

for _module in ("worker.uploads", "worker.audits", "worker.live", "worker.retention",
                "worker.guard"):
    try:
        import_module(_module)
    except ModuleNotFoundError as exc:  # a concern not built yet
        if exc.name != _module:
            raise
