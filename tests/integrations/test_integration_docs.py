"""The copy-paste snippets of docs/integrations/*.md, taken out of the Markdown and run as they
are (in a subprocess, the way a reader runs them) against a live test server of the studio with
an approved live rule: a payment needs a balance check first."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from studio.live.ingest import clear_caches
from studio.rules.models import RuleSet
from studio.traces.models import Event
from studio.workspaces import services as workspace_services
from tests.integrations.chat_server import ChatServer, payments_agent
from tests.live.conftest import approve

REPO = Path(__file__).resolve().parents[2]
PAGES = REPO / "docs" / "integrations"
RULE = "!tool_call:send_money W tool_call:get_balance"

pytestmark = pytest.mark.django_db(transaction=True)


def code_blocks(page: str, language: str) -> list[str]:
    """The fenced code blocks of a docs page in one language, in order."""
    text = (PAGES / page).read_text()
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


@pytest.fixture(autouse=True)
def _fresh_caches():
    from studio.guard import services as guard_services
    clear_caches()
    guard_services.forget_policies()
    yield
    clear_caches()
    guard_services.forget_policies()


@pytest.fixture
def env(live_server, django_user_model):
    """What a reader sets: the studio's address, a workspace with the rule live, a token."""
    owner = django_user_model.objects.create_user(username="owner", password="pw-owner-123")
    workspace = workspace_services.create_workspace("Payments", owner=owner, slug="pay")
    approve(workspace, owner, "pay_after_balance", RULE)
    RuleSet.objects.create(workspace=workspace, name="payments", live=True).rules.set(
        workspace.rules.all())
    token = workspace_services.create_token(workspace, "agent", ["auditor"], by=owner)[1]
    return {**os.environ, "STUDIO_URL": live_server.url, "STUDIO_WORKSPACE": "pay",
            "STUDIO_TOKEN": token, "PYTHONPATH": str(REPO)}


def run(command: list[str], env: dict) -> str:
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def tools_stored(session: str) -> list:
    return [e.output.get("tool") if isinstance(e.output, dict) else None
            for e in Event.objects.filter(session__external_id=session).order_by("step")]


def test_the_pages_have_their_snippets():
    assert len(code_blocks("openai-agents.md", "python")) == 1
    assert len(code_blocks("http.md", "sh")) == 1
    assert len(code_blocks("http.md", "python")) == 1


def test_the_openai_agents_snippet_runs_as_written(env, tmp_path):
    (snippet,) = code_blocks("openai-agents.md", "python")
    script = tmp_path / "snippet.py"
    script.write_text(snippet)
    server = ChatServer(payments_agent)
    try:
        out = run([sys.executable, str(script)], {
            **env, "OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "not-needed",
            "OPENAI_MODEL": "stand-in", "OPENAI_AGENTS_DISABLE_TRACING": "1"})
        told = server.tool_messages()
    finally:
        server.close()
    # The payment proposed first was refused, and the model read why; then the balance check
    # and the payment ran, and the rule was met.
    assert "refused" in told[0] and "pay_after_balance" in told[0], told
    assert "answer: Sent 50 to bob." in out, out
    assert "studio: at the end, pay_after_balance is complied" in out, out
    assert tools_stored("payments-demo-1") == [None, None, "get_balance", None, "send_money",
                                               None, None]


def test_the_curl_snippet_runs_as_written(env):
    (snippet,) = code_blocks("http.md", "sh")
    out = run(["bash", "-e", "-c", snippet], env)
    guard, stored, ended = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert guard["decision"] != "allow"
    assert guard["rules_at_risk"][0]["rule"] == "pay_after_balance"
    assert stored["stored"] == 1
    assert stored["events"][0]["changes"][0]["verdict"] == "complied"
    assert ended["rules"][0]["verdict"] == "complied"
    assert tools_stored("http-demo-1") == ["get_balance"]


def test_the_standard_library_snippet_runs_as_written(env, tmp_path):
    (snippet,) = code_blocks("http.md", "python")
    script = tmp_path / "snippet.py"
    script.write_text(snippet)
    out = run([sys.executable, str(script)], env)
    assert "studio: rule pay_after_balance is complied" in out, out
    assert "at the end, pay_after_balance is complied" in out, out
    assert tools_stored("http-demo-2") == ["get_balance"]
