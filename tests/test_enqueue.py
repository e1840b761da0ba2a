"""Background work is enqueued by task name, after commit, through studio/tasks.py: no module of
studio/ imports worker/ (function-local imports included); in eager mode (no broker: tests,
development) a task enqueued by name runs in-process once the transaction commits; with a broker
it reaches a real worker by name (Postgres and Redis database 14; skipped without them, failed
under CI=true); a broker that cannot be reached goes to the caller's ``unavailable``."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from celery.exceptions import NotRegistered
from django.db import connection

from studio import tasks
from studio.traces.models import VocabularyEntry

from .audits.helpers import add_sessions, make_team
from .audits.test_worker_kill import REPO, Workers, _database_url

STUDIO = REPO / "studio"
REDIS_URL = "redis://127.0.0.1:6379/14"
EVENTS = {"s1": [{"input": "hi", "labels": ["greeting"], "data": {"tool": {"name": "search"}}},
                 {"output": "ok", "labels": ["done"]}],
          "s2": [{"input": "bye", "labels": ["greeting"]}]}


def _missing(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI: {reason}")
    pytest.skip(reason)


# --- no module of studio/ imports worker/ ------------------------------------------------------

def imports_of_worker(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import of ``worker`` in ``source``: ``import``, ``from ...
    import`` and ``import_module``/``__import__`` of a literal name, at any depth."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Name)
                    and node.func.id in ("import_module", "__import__"))
                   or (isinstance(node.func, ast.Attribute)
                       and node.func.attr == "import_module"))):
            names = [node.args[0].value]
        found += [(node.lineno, name) for name in names
                  if name == "worker" or name.startswith("worker.")]
    return found


def test_the_import_finder_sees_imports_at_any_depth():
    source = textwrap.dedent("""
        import os
        import workers_elsewhere
        from studio import tasks

        def enqueue():
            from worker.uploads import parse_upload_task
            import worker
            if True:
                importlib.import_module("worker.audits")
    """)
    assert imports_of_worker(source) == [(7, "worker.uploads"), (8, "worker"),
                                         (10, "worker.audits")]


def test_no_module_of_studio_imports_worker():
    files = sorted(STUDIO.rglob("*.py"))
    assert len(files) > 100  # the walk did find the apps
    found = [f"{path.relative_to(REPO)}:{line}: {name}" for path in files
             for line, name in imports_of_worker(path.read_text())]
    assert found == []


# --- the names the apps enqueue are the worker's tasks -----------------------------------------

def test_every_enqueued_name_is_a_task_the_worker_registers():
    import worker.tasks  # noqa: F401 - what `celery -A worker` loads

    from worker.celery import app

    assert app is tasks.app  # one Celery app
    names = [tasks.PARSE_UPLOAD, tasks.REBUILD_VOCABULARY, tasks.RUN_AUDIT_BATCH,
             tasks.LEARN_RISK_MODEL]
    assert [n for n in names if n not in app.tasks] == []


# --- eager mode: run in-process after commit ---------------------------------------------------

def _vocabulary(workspace) -> set[tuple]:
    return set(VocabularyEntry.objects.filter(workspace=workspace)
               .values_list("kind", "name", "json_type", "carrier", "events"))


@pytest.mark.django_db
def test_in_eager_mode_a_task_enqueued_by_name_runs_in_process_after_commit(
        django_capture_on_commit_callbacks):
    from studio.traces import vocabulary

    assert tasks.app.conf.task_always_eager  # the tests' settings: no broker
    team = make_team()
    add_sessions(team, EVENTS)
    vocabulary.rebuild(team.workspace)
    counted = _vocabulary(team.workspace)
    assert counted  # something to recount
    VocabularyEntry.objects.filter(workspace=team.workspace).delete()

    unavailable = []
    with django_capture_on_commit_callbacks(execute=True):
        tasks.enqueue(tasks.REBUILD_VOCABULARY, team.workspace.pk,
                      unavailable=unavailable.append)
        assert _vocabulary(team.workspace) == set()  # not before the commit
    assert _vocabulary(team.workspace) == counted and unavailable == []


@pytest.mark.django_db
def test_in_eager_mode_an_unknown_task_name_is_an_error():
    with pytest.raises(NotRegistered):
        tasks.enqueue("worker.uploads.no_such_task", 1, after_commit=False,
                      unavailable=pytest.fail)


@pytest.mark.django_db
def test_a_broker_error_goes_to_the_callers_unavailable(monkeypatch):
    from kombu.exceptions import OperationalError

    tried = []

    def down(args, **options):
        tried.append(args)
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    task = tasks.app.tasks[tasks.PARSE_UPLOAD]
    monkeypatch.setattr(task, "apply_async", down)
    unavailable = []
    tasks.enqueue_each(tasks.PARSE_UPLOAD, [(1,), (2,)], after_commit=False,
                       unavailable=unavailable.append)
    # Told once, and the sending stopped at the first error.
    assert [type(e) for e in unavailable] == [OperationalError] and tried == [(1,)]


# --- with a broker: by name to a real worker ---------------------------------------------------

def _producer(env: dict, workspace_id: int, after_commit: bool = True
              ) -> subprocess.CompletedProcess:
    # A process configured as production is (a broker URL, not eager) enqueues by name; it has
    # never imported worker/.
    script = textwrap.dedent(f"""
        import sys
        import django
        django.setup()
        from studio import tasks
        assert not tasks.app.conf.task_always_eager
        tasks.enqueue(tasks.REBUILD_VOCABULARY, {workspace_id}, after_commit={after_commit},
                      unavailable=lambda exc: print("unavailable:", type(exc).__name__))
        print("worker loaded:", any(m == "worker" or m.startswith("worker.")
                                    for m in sys.modules))
    """)
    return subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.django_db(transaction=True)
def test_with_a_broker_a_task_enqueued_by_name_reaches_a_real_worker(tmp_path):
    if connection.vendor != "postgresql":
        _missing("needs Postgres: the worker must see the test's data "
                 "(DATABASE_URL=postgres://...)")
    try:
        import redis

        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1, socket_timeout=2)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure means no usable Redis
        _missing(f"needs Redis at {REDIS_URL} for a real Celery worker ({exc})")
    from studio.traces import vocabulary

    team = make_team()
    add_sessions(team, EVENTS)
    vocabulary.rebuild(team.workspace)
    counted = _vocabulary(team.workspace)
    VocabularyEntry.objects.filter(workspace=team.workspace).delete()

    queue = f"enqueue-test-{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "DATABASE_URL": _database_url(), "CELERY_BROKER_URL": REDIS_URL,
           "DJANGO_SETTINGS_MODULE": "studio.settings", "PYTHONUNBUFFERED": "1",
           "CELERY_QUEUE": queue}
    workers = Workers(env, queue, tmp_path)
    try:
        sent = _producer(env, team.workspace.pk)
        assert sent.returncode == 0, sent.stderr
        assert sent.stdout.split("\n")[0] == "worker loaded: False", sent.stdout
        assert client.llen(queue) == 1  # waiting on the broker, under its name
        workers.start()
        deadline = time.monotonic() + 60
        while _vocabulary(team.workspace) != counted:
            if time.monotonic() > deadline:
                pytest.fail(f"the worker did not run the task\n{workers.output()}")
            time.sleep(0.1)
    finally:
        workers.stop_all()
        client.delete(queue)
    assert tasks.REBUILD_VOCABULARY in Path(tmp_path / "worker1.log").read_text()


def test_with_a_broker_that_cannot_be_reached_the_caller_is_told():
    # Nothing listens on port 9 (discard): the send fails as with Redis down.
    env = {**os.environ, "CELERY_BROKER_URL": "redis://127.0.0.1:9/0",
           "DJANGO_SETTINGS_MODULE": "studio.settings"}
    sent = _producer(env, 1, after_commit=False)  # no database either
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.split("\n")[0] == "unavailable: OperationalError", sent.stdout
