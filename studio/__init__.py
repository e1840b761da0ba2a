"""Compliance Studio.

Deliberately empty: the pure packages (studio.logic, studio.monitor, ...) must import without
Django or Celery, and importing them runs this file first. The Celery app lives in
`studio.tasks` (the apps enqueue by task name there); the tasks in `worker`.
"""
