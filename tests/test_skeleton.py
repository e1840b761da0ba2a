"""The project skeleton: settings, URLs, deploy checks and the Celery wiring."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import call_command

REPO_ROOT = Path(__file__).resolve().parent.parent


def run_python(code: str, **env_overrides: str | None) -> subprocess.CompletedProcess[str]:
    """Run code in a fresh interpreter (settings are read once per process)."""
    env = dict(os.environ)
    for name, value in env_overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_healthz_answers_ok_without_touching_the_database(client):
    # No django_db mark: pytest-django fails the test if the view queries the database.
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"status": "ok"}


def test_system_checks_pass():
    call_command("check")


@pytest.mark.django_db
def test_every_model_change_has_a_migration():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def test_deploy_checks_are_clean_with_production_settings():
    result = run_python(
        "from django.core.management import execute_from_command_line;"
        "execute_from_command_line(['manage.py', 'check', '--deploy', '--fail-level', 'WARNING'])",
        DJANGO_SETTINGS_MODULE="studio.settings",
        DEBUG="false",
        SECRET_KEY="k3y-for-the-deploy-check-" + "x7Qz!pR2@vL9#mN4$wB6%" * 3,
        ALLOWED_HOSTS="studio.example.com",
    )

    assert result.returncode == 0, result.stdout + result.stderr


def test_production_settings_refuse_to_start_without_a_secret_key():
    result = run_python("import studio.settings", DEBUG="false", SECRET_KEY=None)

    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


@pytest.mark.parametrize("name, value, message", [
    ("AUDIT_BATCH_SIZE", "2OO", "AUDIT_BATCH_SIZE must be a whole number, not '2OO'"),
    ("AUDIT_BATCH_SIZE", "0", "AUDIT_BATCH_SIZE must be at least 1, not 0"),
    ("TOKEN_CACHE_SECONDS", "five", "TOKEN_CACHE_SECONDS must be a number, not 'five'"),
    ("LIVE_CONTEXT_SECONDS", "nan", "LIVE_CONTEXT_SECONDS must be at least 0, not nan"),
])
def test_a_mistyped_number_in_the_environment_stops_the_start_naming_it(name, value, message):
    result = run_python("import studio.settings", **{name: value})

    assert result.returncode != 0
    assert f"ImproperlyConfigured: {message}" in result.stderr


def test_a_cache_url_that_is_not_redis_stops_the_start_naming_it():
    result = run_python("import studio.settings", CACHE_URL="memcached://cache:11211")

    assert result.returncode != 0
    assert ("ImproperlyConfigured: CACHE_URL must be a redis://, rediss:// or unix:// URL, "
            "not 'memcached://cache:11211'") in result.stderr


def test_with_a_redis_cache_url_server_processes_share_the_live_rate_counts():
    """Two server processes, each with CACHE_URL, count one token's requests together."""
    url = "redis://127.0.0.1:6379/6"
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except Exception as exc:  # noqa: BLE001 - any failure means no usable Redis
        pytest.skip(f"needs Redis at {url} ({exc})")
    key = f"live-rate:test:{os.getpid()}:{time.time_ns()}"
    count = ("import django; django.setup()\n"
             "from django.core.cache import cache\n"
             f"cache.add({key!r}, 0, timeout=60); print(cache.incr({key!r}))\n")
    counts = [run_python(count, CACHE_URL=url, DJANGO_SETTINGS_MODULE="studio.settings")
              for _ in range(2)]

    assert [r.stdout.strip() for r in counts] == ["1", "2"], [r.stderr for r in counts]


def test_without_a_broker_tasks_run_in_process_and_raise_there():
    result = run_python(
        "from worker import celery_app as app\n"
        "assert app.conf.task_always_eager and app.conf.task_eager_propagates\n"
        "@app.task\n"
        "def add(x, y):\n"
        "    return x + y\n"
        "assert add.delay(2, 3).get() == 5\n",
        CELERY_BROKER_URL=None,
    )

    assert result.returncode == 0, result.stderr


def test_with_a_broker_tasks_are_queued():
    result = run_python(
        "from worker import celery_app as app\n"
        "print(app.conf.task_always_eager, app.conf.broker_url)",
        CELERY_BROKER_URL="redis://redis.invalid:6379/0",
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "redis://redis.invalid:6379/0"]


def test_celery_survives_killed_workers_without_running_a_task_twice():
    from worker import celery_app as app

    assert app.conf.task_acks_late
    assert app.conf.task_reject_on_worker_lost
    assert app.conf.worker_prefetch_multiplier == 1
    # Redis redelivers unacknowledged tasks after the visibility timeout: it must outlast any task.
    for options in (app.conf.broker_transport_options, app.conf.result_backend_transport_options):
        assert options["visibility_timeout"] > app.conf.task_time_limit


def test_importing_the_studio_package_loads_neither_django_nor_celery():
    # studio/__init__.py runs before every pure package (studio.logic, ...), which must stay light.
    result = run_python(
        "import sys, studio\n"
        "print(sorted(m for m in ('django', 'celery') if m in sys.modules))"
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
