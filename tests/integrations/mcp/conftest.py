"""The studio as a live test server (pytest-django's live_server, over HTTP) with an approved live
rule - a payment needs a balance check first - and a token; the gateway and the upstream MCP
servers as real processes (``manage.py mcp_gateway``, tests/integrations/mcp/upstream_server.py)."""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from django.test import Client as DjangoClient

from studio.guard import services as guard_services
from studio.rules.models import Rule, RuleSet
from studio.traces.models import Event
from studio.workspaces import services as workspace_services
from tests.live.conftest import approve

REPO = Path(__file__).resolve().parents[3]
UPSTREAM = REPO / "tests" / "integrations" / "mcp" / "upstream_server.py"
RULE = "!tool_call:send_money W tool_call:get_balance"
SENTENCE = "Check the balance before sending any money."


@pytest.fixture
def workspace(owner):
    ws = workspace_services.create_workspace("Payments", owner=owner, slug="pay")
    approve(ws, owner, "pay_after_balance", RULE)
    Rule.objects.filter(workspace=ws, name="pay_after_balance").update(description=SENTENCE)
    return ws


@pytest.fixture
def token(workspace, owner):
    return workspace_services.create_token(workspace, "gateway", ["auditor"], by=owner)[1]


@pytest.fixture
def set_policy(workspace, owner):
    """The rule's set, live, with a guard policy put as staff do (through the API)."""
    ruleset = RuleSet.objects.create(workspace=workspace, name="payments", live=True)
    ruleset.rules.set(workspace.rules.all())
    staff = DjangoClient()
    staff.force_login(owner)

    def put(policy: dict):
        answer = staff.put(f"/api/w/pay/rule-sets/{ruleset.pk}/guard-policy",
                           data=json.dumps({"policy": policy}), content_type="application/json")
        assert answer.status_code == 200, answer.content
        guard_services.forget_policies()

    put({})
    return put


@pytest.fixture
def calls(tmp_path):
    """The file the upstreams note every call they run in (one JSON line each)."""
    path = tmp_path / "upstream-calls.jsonl"
    path.touch()

    def read() -> list[str]:
        return [json.loads(line)["tool"] for line in path.read_text().splitlines()]

    read.path = str(path)
    return read


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the process ended ({process.returncode}) before it served: "
                                 f"{process.stderr.read() if process.stderr else ''}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing answered on port {port} within {seconds} s")


@contextlib.contextmanager
def running(argv: list[str], port: int, env: dict | None = None):
    """A server process (its stderr kept in a file), stopped on leaving."""
    log = open(os.devnull, "w") if os.environ.get("QUIET_PROCESSES") else None
    process = subprocess.Popen(argv, cwd=REPO, env={**os.environ, **(env or {})},
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=log or subprocess.PIPE, text=True)
    try:
        wait_for_port(port, process)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if log:
            log.close()


def upstream_argv(calls=None, prefix: str = "") -> list[str]:
    argv = [sys.executable, str(UPSTREAM)]
    if calls is not None:
        argv += ["--calls", calls.path]
    return argv + (["--prefix", prefix] if prefix else [])


def upstream_command(calls=None, prefix: str = "") -> str:
    """The upstream as the command line an --upstream names."""
    return shlex.join(upstream_argv(calls, prefix))


def gateway_argv(studio_url: str, upstreams: list[str], *extra: str) -> list[str]:
    argv = [str(REPO / "manage.py"), "mcp_gateway", "--workspace", "pay",
            "--studio-url", studio_url]
    for spec in upstreams:
        argv += ["--upstream", spec]
    return argv + list(extra)


def stored(session: str, count: int, seconds: float = 20) -> list[Event]:
    """The session's events, once there are ``count`` of them (they are stored in the
    background, after the answer)."""
    deadline = time.monotonic() + seconds
    while True:
        events = list(Event.objects.filter(session__external_id=session).order_by("step"))
        if len(events) >= count or time.monotonic() > deadline:
            return events
        time.sleep(0.05)


class Person:
    """A reviewer at a browser, over HTTP: signs in on the sign-in page, reads the Live page and
    posts its Approve/Deny form (with the page's CSRF token), as the form does without
    JavaScript."""

    def __init__(self, base: str, username: str, password: str):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        page = self.get("/accounts/login/")
        self.post("/accounts/login/", {"username": username, "password": password},
                  _token(page))

    def get(self, path: str) -> str:
        with self.opener.open(self.base + path, timeout=20) as response:
            return response.read().decode()

    def post(self, path: str, fields: dict, token: str) -> str:
        body = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": token}).encode()
        request = urllib.request.Request(self.base + path, data=body,
                                         headers={"Referer": self.base + path})
        with self.opener.open(request, timeout=20) as response:
            return response.read().decode()

    def answer_on_the_live_page(self, slug: str, approve: bool, note: str = "",
                                seconds: float = 30) -> str:
        """Wait for a question on the Live page, then answer it; the page after."""
        deadline = time.monotonic() + seconds
        while True:
            page = self.get(f"/w/{slug}/live/")
            found = re.search(r'action="(/w/[^"]+/guard/decisions/\d+/answer)"', page)
            if found:
                return self.post(found.group(1), {"answer": "approve" if approve else "deny",
                                                  "note": note}, _token(page))
            assert time.monotonic() < deadline, "no question appeared on the Live page"
            time.sleep(0.2)


def _token(page: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert found, "the page has no CSRF token"
    return found.group(1)
