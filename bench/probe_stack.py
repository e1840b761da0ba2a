"""What the fault probe (``bench.faults_probe``) runs the studio on: a fresh Postgres database,
a redis-server of its own, uvicorn with the production settings of docs/deployment.md, and the
helpers that wait for them and print a scenario's summary.  Shared by every scenario."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PG = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def database_url(name: str) -> str:
    return f"postgres://{PG['user']}@{PG['host']}:{PG['port']}/{name}"


def fresh_database(name: str, environment: dict | None = None) -> None:
    """(Re)create ``name``, point this process at it (with ``environment``), set Django up and
    migrate."""
    import psycopg

    with psycopg.connect(**PG, dbname="postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    os.environ.update({"DATABASE_URL": database_url(name),
                       "DJANGO_SETTINGS_MODULE": "studio.settings", **(environment or {})})
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def wait(predicate, timeout: float, what: str, interval: float = 0.1, logs=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(interval)
    raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}"
                     + (f"\n{logs()}" if logs else ""))


def redis_program() -> str:
    program = shutil.which("redis-server")
    if program is None:
        raise SystemExit("needs the redis-server program on PATH (a Redis of the probe's own)")
    return program


class RedisServer:
    """A redis-server of the probe's own on a free port, without persistence (a restart loses
    every key, the worst case); ``restart`` shuts it down (``SHUTDOWN NOSAVE``) and starts it
    again on the same port."""

    def __init__(self, folder: Path, down_seconds: float = 0.5):
        self.program, self.folder, self.port = redis_program(), folder, free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.down_seconds = down_seconds
        self.process: subprocess.Popen | None = None
        self.restarts = 0

    def start(self) -> None:
        import redis

        with open(self.folder / f"redis{self.restarts}.log", "w") as log:
            self.process = subprocess.Popen(
                [self.program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(self.folder)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        wait(lambda: self._answers(client), 10, f"redis-server on port {self.port}", 0.02)

    def _answers(self, client) -> bool:
        import redis

        if self.process.poll() is not None:
            raise SystemExit(f"redis-server exited on port {self.port}")
        try:
            return client.ping()
        except redis.ConnectionError:
            return False

    def restart(self) -> None:
        # A bare socket: redis-py would retry the command whose connection the server closes.
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as control:
            control.sendall(b"SHUTDOWN NOSAVE\r\n")
            control.recv(100)
        self.process.wait(timeout=10)
        time.sleep(self.down_seconds)
        self.restarts += 1
        self.start()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def summary(name: str, figures: dict, must_be_zero: tuple[str, ...]) -> bool:
    ok = all(figures.get(key, 0) == 0 for key in must_be_zero)
    text = ", ".join(f"{key} {value:,}" if isinstance(value, int) and not isinstance(value, bool)
                     else f"{key} {value}" for key, value in figures.items())
    print(f"\nSUMMARY {name}: {text} -> {'ok' if ok else 'DEFECT'}", flush=True)
    return ok


PRODUCTION_SETTINGS = '''
from studio.settings import *  # noqa: F401,F403
SECURE_SSL_REDIRECT = False  # no TLS on loopback
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
LIVE_RATE_LIMIT_PER_MINUTE = 0  # the probe counts errors and losses, not the limiter
'''


def production_env(folder: Path, database: str, extra: dict) -> dict:
    """The web server's environment: docs/deployment.md's production settings on loopback."""
    Path(folder, "probe_settings.py").write_text(PRODUCTION_SETTINGS)
    env = {**os.environ, "DATABASE_URL": database_url(database), "DEBUG": "false",
           "SECRET_KEY": "probe-only-" + "k" * 50, "ALLOWED_HOSTS": "127.0.0.1,localhost",
           "DJANGO_SETTINGS_MODULE": "probe_settings", "DATABASE_POOL": "true",
           "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join([str(folder), str(REPO),
                                          os.environ.get("PYTHONPATH", "")])}
    env.update(extra)
    return env


def uvicorn(services, port: int, workers: int = 2):
    return services.start("web", ["-m", "uvicorn", "studio.asgi:application", "--host",
                                  "127.0.0.1", "--port", str(port), "--workers", str(workers),
                                  "--lifespan", "off", "--no-access-log", "--log-level",
                                  "warning", "--timeout-keep-alive", "5",
                                  "--timeout-graceful-shutdown", "35"])


def healthy(base: str) -> bool:
    import requests

    try:
        return requests.get(f"{base}/healthz", timeout=5).status_code == 200
    except requests.RequestException:
        return False
