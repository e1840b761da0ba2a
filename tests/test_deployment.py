"""docker-compose.yml, read without Docker: every service that runs the studio's code runs it in
an image where the project is installed, each program it starts exists there, and the settings
start with the environment compose gives it (Postgres, Redis, nothing in-process).

Docker does not run here, so this is the static part of `docker compose up`: before, beat ran
`celery` in a bare python image (`celery: not found`) and the sweeper never ran.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# The studio's (not postgres, redis); mcp-gateway only runs with `--profile mcp`.
APP_SERVICES = ["web", "worker", "models-worker", "beat", "mcp-gateway"]


def _service(name: str) -> dict:
    return COMPOSE["services"][name]


def _steps(command) -> list[list[str]]:
    """The programs a compose command runs, each as its argv (``sh -c "a && b"`` unpacked)."""
    argv = command if isinstance(command, list) else shlex.split(command)
    if argv[:2] == ["sh", "-c"]:
        return [shlex.split(part) for part in re.split(r"&&|;", argv[2])]
    return [argv]


def _dockerfile_of(service: dict) -> str:
    build = service.get("build")
    assert build is not None, "the service must be built from the Dockerfile, not a bare image"
    context = build if isinstance(build, str) else build.get("context", ".")
    name = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
    return (ROOT / context / name).read_text()


def _environment(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {key: str(value) for key, value in env.items()}


def test_the_services_that_run_the_studio_are_the_ones_checked():
    running = {name for name, service in COMPOSE["services"].items()
               if any(step[0] in ("python", "celery") for step in
                      _steps(service.get("command") or ["true"]))}
    assert running == set(APP_SERVICES)


@pytest.mark.parametrize("name", APP_SERVICES)
def test_each_service_image_installs_the_project(name):
    dockerfile = _dockerfile_of(_service(name))
    lines = [line.strip() for line in dockerfile.splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    installs = [i for i, line in enumerate(lines)
                if re.fullmatch(r"RUN pip install( --no-cache-dir)? (-e )?\.", line)]
    assert installs, "the Dockerfile must `pip install` the project"
    copied = " ".join(line for line in lines[:installs[0]] if line.startswith("COPY "))
    for needed in ("pyproject.toml", "README.md", "studio", "worker"):  # what the build reads
        assert needed in copied, f"{needed} is not in the image when the project is installed"
    assert lines[0].startswith("FROM python:3.11"), "requires-python is >=3.11"


@pytest.mark.parametrize("name", APP_SERVICES)
def test_each_program_a_service_starts_exists_in_its_image(name):
    from django.core.management import get_commands

    dependencies = {re.split(r"[\[<>=~ ]", d, 1)[0].lower()
                    for d in PYPROJECT["project"]["dependencies"]}
    for argv in _steps(_service(name)["command"]):
        program = argv[0]
        if program == "python":
            assert argv[1] == "manage.py", argv
            assert argv[2] in get_commands(), f"no management command {argv[2]!r}"
        elif program == "celery":
            assert "celery" in dependencies  # installed with the project: the `celery` script
            assert argv[1:3] == ["-A", "worker"] and argv[3] in ("worker", "beat"), argv
        elif program == "uvicorn":
            assert "uvicorn" in dependencies
            assert argv[1] == "studio.asgi:application", argv
        else:
            pytest.fail(f"{name} runs {program!r}, which the image does not provide")


@pytest.mark.parametrize("name", APP_SERVICES)
def test_the_settings_start_with_the_environment_compose_gives(name):
    # A fresh interpreter with only compose's variables (and PATH): what the container sees.
    service = _service(name)
    env = {"PATH": os.environ["PATH"], **_environment(service)}
    probe = ("import django, json; django.setup()\n"
             "from django.conf import settings\n"
             "from worker.celery import app\n"
             "app.loader.import_default_modules()\n"
             "print(json.dumps({'engine': settings.DATABASES['default']['ENGINE'],\n"
             "  'broker': settings.CELERY_BROKER_URL,\n"
             "  'eager': getattr(settings, 'CELERY_TASK_ALWAYS_EAGER', False),\n"
             "  'cache': settings.CACHES['default']['BACKEND'],\n"
             "  'beat_tasks': [e['task'] for e in settings.CELERY_BEAT_SCHEDULE.values()],\n"
             "  'tasks': sorted(app.tasks)}))\n")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT,
                            env={**env, "DJANGO_SETTINGS_MODULE": "studio.settings"},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["engine"] == "django.db.backends.postgresql"
    assert found["broker"].startswith("redis://") and not found["eager"]
    assert found["cache"].endswith("RedisCache")
    # What beat sends, the worker knows (an unknown name would be dropped as unregistered).
    assert set(found["beat_tasks"]) <= set(found["tasks"])
    assert "worker.audits.run_audit_batch" in found["tasks"]


def test_the_services_start_in_order_and_beat_runs_once():
    for name in ("worker", "models-worker", "beat"):
        assert _service(name)["depends_on"]["web"]["condition"] == "service_healthy", (
            f"{name} needs the schema web migrates")
    assert "deploy" not in _service("beat") or _service("beat")["deploy"].get("replicas", 1) == 1
    dockerignore = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in dockerignore and "db.sqlite3" in dockerignore


def test_every_queue_has_a_worker_and_models_have_their_own():
    """Each queue tasks are sent to is consumed by a compose worker, and the risk models' queue
    by a worker of its own (a relearn must not hold the workers uploads and audits wait for)."""
    from django.conf import settings

    consumed = {}
    for name, service in COMPOSE["services"].items():
        for argv in _steps(service.get("command") or ["true"]):
            if argv[:4] == ["celery", "-A", "worker", "worker"]:
                assert "-Q" in argv, f"{name} must name its queues (-Q)"
                consumed[name] = set(argv[argv.index("-Q") + 1].split(","))
    sent_to = {settings.CELERY_TASK_DEFAULT_QUEUE,
               *(route["queue"] for route in settings.CELERY_TASK_ROUTES.values())}
    assert sent_to <= set().union(*consumed.values()), consumed
    models = [name for name, queues in consumed.items() if settings.GUARD_MODEL_QUEUE in queues]
    assert models and all(consumed[name] == {settings.GUARD_MODEL_QUEUE} for name in models)


def test_the_first_admin_can_be_created_by_a_command(db):
    from django.core.management import call_command

    from studio.workspaces.models import Membership, Workspace

    os.environ["DJANGO_SUPERUSER_PASSWORD"] = "a long enough passphrase"
    try:
        call_command("create_workspace", "Payments", admin="alice", create_user=True)
        call_command("create_workspace", "Payments", admin="alice")  # again: nothing new
    finally:
        del os.environ["DJANGO_SUPERUSER_PASSWORD"]
    workspace = Workspace.objects.get(slug="payments")
    roles = set(Membership.objects.filter(workspace=workspace, user__username="alice")
                .values_list("role", flat=True))
    assert roles == {"admin", "author", "reviewer", "auditor"}
    from django.contrib.auth import authenticate

    assert authenticate(username="alice", password="a long enough passphrase") is not None


def test_an_unknown_admin_is_refused_with_what_to_do(db):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="createsuperuser"):
        call_command("create_workspace", "Payments", admin="nobody")


@pytest.mark.parametrize("name", sorted(COMPOSE["services"]))
def test_every_service_is_restarted_when_it_stops(name):
    # Nothing else brings a crashed worker back: before, a broker restart that killed it left
    # uploads "received" for ever.
    policy = _service(name).get("restart")
    assert policy in ("unless-stopped", "always", "on-failure"), (
        f"{name} has restart: {policy!r}; a crash would leave it down")


def test_redis_keeps_the_queue_across_its_own_restarts():
    command = _steps(_service("redis")["command"])[0]
    assert command[command.index("--maxmemory-policy") + 1] == "noeviction"
    assert command[command.index("--appendonly") + 1] == "yes"
    assert any(volume.endswith(":/data") for volume in _service("redis")["volumes"])


def _pin(name: str):
    from packaging.requirements import Requirement

    for line in PYPROJECT["project"]["dependencies"]:
        requirement = Requirement(line)
        if requirement.name.lower() == name:
            return requirement.specifier
    pytest.fail(f"pyproject.toml does not name {name}")


def test_the_broker_client_versions_are_pinned_to_the_range_that_survives_restarts():
    from importlib.metadata import version

    celery, kombu, redis = _pin("celery"), _pin("kombu"), _pin("redis")
    # Celery 5.7.0's worker exits on a broker restart with tasks unacknowledged
    # (tests/test_broker_restart.py); 5.6.3 with kombu 5.6.2 or 5.7.0 and redis-py 6.4-8.1 do not.
    assert "5.7.0" not in celery and "5.6.3" in celery
    assert {"5.6.2", "5.7.0"} <= set(kombu.filter(["5.6.2", "5.7.0"]))
    assert {"6.4.0", "8.1.0"} <= set(redis.filter(["6.4.0", "8.1.0"]))
    # The versions installed here are inside the pins (a stale environment tests the wrong ones).
    for name, pinned in (("celery", celery), ("kombu", kombu), ("redis", redis)):
        assert version(name) in pinned, f"{name} {version(name)} is outside {pinned}"


def test_a_server_error_under_production_settings_writes_its_traceback_to_stderr():
    # A fresh interpreter with DEBUG off, as production starts; a view that fails, served
    # through Django's whole request handler (middleware, exception handling, logging).
    fault = f"a deliberate fault {os.getpid()}-{id(COMPOSE)}"
    probe = ("import sys, types, django\n"
             "django.setup()\n"
             "from django.conf import settings\n"
             "from django.test import Client\n"
             "from django.test.utils import override_settings\n"
             "from django.urls import include, path\n"
             "def fails(request):\n"
             f"    raise RuntimeError({fault!r})\n"
             "urls = types.ModuleType('failing_urls')\n"
             "urls.urlpatterns = [path('fails', fails), path('', include('studio.urls'))]\n"
             "sys.modules['failing_urls'] = urls\n"
             "assert not settings.DEBUG\n"
             "with override_settings(ROOT_URLCONF='failing_urls'):\n"
             "    response = Client(raise_request_exception=False).get('/fails', secure=True)\n"
             "    not_found = Client().get('/nowhere', secure=True)\n"
             "print(response.status_code, not_found.status_code)\n")
    env = {"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "studio.settings",
           "DEBUG": "false", "SECRET_KEY": "production-like " * 4, "ALLOWED_HOSTS": "testserver",
           "DATABASE_URL": os.environ.get("DATABASE_URL", "sqlite:///:memory:")}
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["500", "404"]
    log = result.stderr
    assert "ERROR django.request" in log and "Internal Server Error: /fails" in log, log
    assert "Traceback (most recent call last):" in log and f"RuntimeError: {fault}" in log, log
    assert "in fails" in log  # the frame that raised
    # Client errors stay out of the production log.
    assert "/nowhere" not in log, log


def test_the_mcp_gateway_reaches_the_studio_over_http_and_runs_only_when_asked():
    gateway = _service("mcp-gateway")
    assert gateway["profiles"] == ["mcp"]  # `docker compose up` alone does not start it
    assert gateway["depends_on"]["web"]["condition"] == "service_healthy"
    assert _environment(gateway)["STUDIO_URL"] == "http://web:8000"  # a client of the API
    (argv,) = _steps(gateway["command"])
    assert argv[argv.index("--transport") + 1] == "http"
    assert "--token" not in argv  # read from STUDIO_TOKEN: kept out of the process list
