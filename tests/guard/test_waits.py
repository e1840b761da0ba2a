"""Guard polls that wait for a person, against a real uvicorn server (issue 24, item 3).

The server is started by the test on a free port with the test database (the test commits its
data), one process, the per-token cap at 4 and the per-workspace cap at 8.  Checked: while
polls wait, the site answers (``/healthz`` and a guard decision come back while every poll is
still waiting) and the waits hold neither a server thread nor a database connection each; a
person's answer ends the wait with that answer; beyond a cap the poll gets 429 with
Retry-After, ``wait=0`` is never refused; a client that hangs up gives its count back.

Needs Postgres (skipped with the reason on SQLite, except under CI=true where it fails) and
uvicorn (a dependency of the project).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection
from django.test import Client

from studio.workspaces import services as workspace_services
from studio.rules.models import RuleSet
from tests.live.conftest import RULES, approve, owner, workspace  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]
PER_TOKEN = 4
PER_WORKSPACE = 8
DELETE = {"output": {"tool": "delete", "args": {}}}
PAY = {"output": {"tool": "pay", "args": {"amount": 10}}}


def _missing(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: a missing service fails the test)")
    pytest.skip(reason)


def _database_url() -> str:
    s = connection.settings_dict
    auth = quote(s["USER"] or "")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"])
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A uvicorn process serving studio.asgi on a free port."""

    def __init__(self, tmp_path: Path):
        if connection.vendor != "postgresql":
            _missing("needs Postgres: the server process shares the test database")
        try:
            import uvicorn  # noqa: F401
        except ImportError:
            _missing("needs uvicorn (pip install -e .)")
        self.port = _free_port()
        env = dict(os.environ)
        env.pop("CACHE_URL", None)  # one process: the local-memory cache counts for all of it
        # As documented for uvicorn: no persistent connections (each request has its thread).
        env.update(DATABASE_URL=_database_url(), DEBUG="true", DATABASE_CONN_MAX_AGE="0",
                   GUARD_WAITS_PER_TOKEN=str(PER_TOKEN),
                   GUARD_WAITS_PER_WORKSPACE=str(PER_WORKSPACE))
        self.log = tmp_path / "uvicorn.log"
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "studio.asgi:application", "--host",
                 "127.0.0.1", "--port", str(self.port), "--workers", "1", "--lifespan", "off",
                 "--log-level", "warning"],
                cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"uvicorn exited: {self.log.read_text()[-2000:]}")
            try:
                if self.request("GET", "/healthz", timeout=2)[0] == 200:
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        pytest.fail(f"uvicorn did not answer: {self.log.read_text()[-2000:]}")

    def request(self, method: str, path: str, body=None, token: str | None = None,
                timeout: float = 40):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            conn.request(method, path, body=None if body is None else json.dumps(body),
                         headers=headers)
            response = conn.getresponse()
            data = response.read()
            return response.status, (json.loads(data) if data else None), dict(
                response.getheaders())
        finally:
            conn.close()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def tokens(workspace, owner):
    return [workspace_services.create_token(workspace, f"agent-{i}", ["auditor"], by=owner)[1]
            for i in range(3)]


@pytest.fixture
def staff(owner):
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def server(tmp_path, workspace, owner, staff):
    # Every delete asks a person, who has two minutes (set before the server reads a policy).
    ruleset = RuleSet.objects.create(workspace=workspace, name="shop", live=True)
    ruleset.rules.set(workspace.rules.all())
    answer = staff.put(f"/api/w/{workspace.slug}/rule-sets/{ruleset.pk}/guard-policy",
                       data=json.dumps({"policy": {"interventions": {"no_delete": "ask_human"},
                                                   "human_timeout_seconds": 120}}),
                       content_type="application/json")
    assert answer.status_code == 200, answer.content
    running = Server(tmp_path)
    yield running
    running.stop()


def ask(server, token, session, decision_id, event=DELETE):
    status, body, _ = server.request(
        "POST", f"/api/w/acme/live/sessions/{session}/guard",
        {"event": event, "decision_id": decision_id}, token)
    assert status == 200, body
    return body


def pending_decision(server, token, session, decision_id):
    body = ask(server, token, session, decision_id)
    assert (body["decision"], body["status"]) == ("ask_human", "pending"), body
    return body["poll"]


def pk_of(staff, decision_id):
    listed = staff.get("/api/w/acme/guard/decisions?limit=500").json()
    return next(row["id"] for row in listed if row["decision_id"] == decision_id)


class Poll(threading.Thread):
    """One waiting poll on its own connection; ``result`` when it has returned.  Refused by a
    cap (the test's probes hold counts for a moment too), it asks again, as an agent does."""

    def __init__(self, server, path, token, wait):
        super().__init__(daemon=True)
        self.server, self.path, self.token, self.wait = server, path, token, wait
        self.result = None

    def run(self):
        while True:
            answer = self.server.request("GET", f"{self.path}?wait={self.wait}", None,
                                         self.token)
            if answer[0] != 429:
                self.result = answer
                return
            time.sleep(0.1)


def waiting_socket(server, path, token):
    """A socket whose poll is waiting (no answer within a second; a refusal is answered at
    once, and asked again)."""
    while True:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        sock.sendall(f"GET {path}?wait=25 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     f"Authorization: Bearer {token}\r\n\r\n".encode())
        sock.settimeout(1.0)
        try:
            answer = sock.recv(200)
        except TimeoutError:
            return sock
        sock.close()
        assert answer.startswith(b"HTTP/1.1 429"), answer
        time.sleep(0.1)


def until(condition, what: str, seconds: float = 20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds} s: {what}")


def server_connections(database: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s "
                       "AND pid <> pg_backend_pid()", [database])
        return cursor.fetchone()[0]


def test_waiting_polls_hold_no_thread_and_end_with_the_persons_answer(server, tokens, staff):
    polls = [pending_decision(server, tokens[0], f"s{i}", f"q{i}") for i in range(8)]
    # Warm up what a wait uses (its watch thread, the thread that gives counts back), then
    # count the server's database connections.
    pending_decision(server, tokens[2], "warm", "warm")
    warm = Poll(server, "/api/w/acme/live/sessions/warm/guard/warm", tokens[2], 0.5)
    warm.run()
    assert warm.result[0] == 200 and warm.result[1]["status"] == "pending"
    database = connection.settings_dict["NAME"]
    connections_before = server_connections(database)

    waiting = [Poll(server, path, tokens[i // PER_TOKEN], 25) for i, path in enumerate(polls)]
    for poll in waiting:
        poll.start()
    # All eight are waiting once the workspace's cap refuses a ninth.
    until(lambda: server.request("GET", f"{polls[0]}?wait=0.2", None, tokens[2])[0] == 429,
          "the eight polls waiting")

    assert server.request("GET", "/healthz")[0] == 200
    allowed = ask(server, tokens[2], "busy", "pay-1", PAY)
    assert allowed["decision"] == "allow"
    assert all(poll.result is None for poll in waiting), "a poll returned before its answer"
    # Eight waits hold no database connection each (a view sleeping between queries would).
    assert server_connections(database) <= connections_before + 2

    first = staff.post(f"/api/w/acme/guard/decisions/{pk_of(staff, 'q0')}/approve",
                       data=json.dumps({"note": "fine"}), content_type="application/json")
    assert first.status_code == 200
    until(lambda: waiting[0].result, "the approved poll's answer")
    status, body, _ = waiting[0].result
    assert status == 200
    assert (body["status"], body["decision"], body["decided_by"], body["note"]) == (
        "approved", "allow", "owner", "fine")
    assert all(poll.result is None for poll in waiting[1:])

    for i in range(1, 8):
        denied = staff.post(f"/api/w/acme/guard/decisions/{pk_of(staff, f'q{i}')}/deny",
                            data="{}", content_type="application/json")
        assert denied.status_code == 200
    for poll in waiting[1:]:
        poll.join(20)
        status, body, _ = poll.result
        assert status == 200 and (body["status"], body["decision"]) == ("denied", "stop")


def test_the_caps_answer_429_with_retry_after_and_a_hang_up_gives_its_count_back(
        server, tokens, staff):
    paths = [pending_decision(server, tokens[0], f"c{i}", f"c{i}") for i in range(3)]
    first = [Poll(server, paths[0], tokens[0], 25) for _ in range(PER_TOKEN)]
    for poll in first:
        poll.start()
    refused = until(lambda: (lambda r: r if r[0] == 429 else None)(
        server.request("GET", f"{paths[1]}?wait=0.2", None, tokens[0])), "the token's cap")
    status, body, headers = refused
    assert int(headers["Retry-After"]) >= 1
    assert "GUARD_WAITS_PER_TOKEN" in body["detail"] and "wait=0" in body["detail"]
    # Not waiting is never refused for this.
    status, body, _ = server.request("GET", f"{paths[1]}?wait=0", None, tokens[0])
    assert status == 200 and body["status"] == "pending"

    # The second token's polls, sent on sockets this test then closes.
    hung_up = [waiting_socket(server, paths[1], tokens[1])
               for _ in range(PER_WORKSPACE - PER_TOKEN)]
    status, body, headers = until(lambda: (lambda r: r if r[0] == 429 else None)(
        server.request("GET", f"{paths[2]}?wait=0.2", None, tokens[2])), "the workspace's cap")
    assert "GUARD_WAITS_PER_WORKSPACE" in body["detail"] and int(headers["Retry-After"]) >= 1

    for sock in hung_up:
        sock.close()
    # The server sees the hang-ups, ends those waits and takes their counts back: the third
    # token's wait is admitted (and ends when its decision is answered).
    admitted = Poll(server, paths[2], tokens[2], 25)
    until(lambda: server.request("GET", f"{paths[2]}?wait=0.2", None, tokens[2])[0] == 200,
          "a wait admitted after the hang-ups")
    admitted.start()
    for decision_id in ("c0", "c2"):
        staff.post(f"/api/w/acme/guard/decisions/{pk_of(staff, decision_id)}/approve",
                   data="{}", content_type="application/json")
    for poll in [*first, admitted]:
        poll.join(20)
        assert poll.result[0] == 200 and poll.result[1]["status"] == "approved"
    # All counts given back: the first token waits again.
    status, body, _ = server.request("GET", f"{paths[1]}?wait=0.3", None, tokens[0])
    assert status == 200 and body["status"] == "pending"
