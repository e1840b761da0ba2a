"""Chooses the test database before Django reads its settings.

Loaded with ``-p tests.database`` (see pyproject.toml), so this module is imported while pytest
parses its arguments: earlier than pytest-django, which imports the settings in its first hook.
Tests run on Postgres, the production database, whenever a local one answers; otherwise on
SQLite, so a fresh machine needs nothing.  An explicit DATABASE_URL always wins.  Subprocesses
(manage.py, celery) inherit the choice through the environment.
"""

import os

import psycopg

# pytest-django creates (and drops) test_studio next to it.
LOCAL_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/studio"


def _local_postgres_is_reachable() -> bool:
    try:
        with psycopg.connect(host="127.0.0.1", port=5432, dbname="postgres", user="postgres",
                             connect_timeout=1):
            return True
    except psycopg.Error:
        return False


if not os.environ.get("DATABASE_URL") and _local_postgres_is_reachable():
    os.environ["DATABASE_URL"] = LOCAL_POSTGRES_URL

# Under pytest-xdist (.ci/run: -n 2 --dist loadfile) each worker has its own test database
# (pytest-django adds the worker's id to its name), so ids repeat across workers and files
# stored under one UPLOAD_ROOT could meet: each worker gets a folder of its own.  (The tests with
# a real Celery worker already keep apart: a Redis database number per file, or a queue name
# of their own, and beat's schedule in tmp_path.)
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _XDIST_WORKER and not os.environ.get("UPLOAD_ROOT"):
    from pathlib import Path

    os.environ["UPLOAD_ROOT"] = str(Path(__file__).resolve().parents[1] / "var"
                                    / f"uploads-{_XDIST_WORKER}")
