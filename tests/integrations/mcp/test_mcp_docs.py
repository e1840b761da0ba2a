"""docs/integrations/mcp.md's snippets, as they are on the page: the Python block is run against
a live test server (the gateway started over stdio in front of the test bank), and the MCP host
configuration's arguments are ones the command accepts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from studio.traces.models import Event
from tests.integrations.mcp.conftest import REPO, SENTENCE, stored

PAGE = REPO / "docs" / "integrations" / "mcp.md"

pytestmark = pytest.mark.django_db(transaction=True)


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", PAGE.read_text(), re.MULTILINE | re.DOTALL)


def test_the_pages_python_snippet_runs_against_the_studio(live_server, token, set_policy,
                                                          tmp_path):
    (snippet,) = blocks("python")
    script = tmp_path / "snippet.py"
    script.write_text(snippet)
    done = subprocess.run([sys.executable, str(script)], cwd=REPO, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "STUDIO_URL": live_server.url,
                               "STUDIO_TOKEN": token})
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "tools: echo, get_balance, send_money" in out
    assert "refused: True" in out and SENTENCE in out, out
    assert "balance: {'account': 'me', 'balance': 200}" in out
    events = stored("docs-demo-1", 2)
    assert [e.output["tool"] for e in events if isinstance(e.output, dict)
            and "tool" in e.output] == ["get_balance"]
    assert Event.objects.count() == 2


def test_the_pages_host_configuration_is_a_command_the_gateway_accepts():
    from studio.web.management.commands.mcp_gateway import Command

    (config,) = [json.loads(block) for block in blocks("json")]
    (server,) = config["mcpServers"].values()
    assert server["args"][0].endswith("manage.py") and server["args"][1] == "mcp_gateway"
    options = Command().create_parser("manage.py", "mcp_gateway").parse_args(server["args"][2:])
    assert (options.workspace, options.transport) == ("pay", "stdio")
    assert options.upstream == ["bank=/srv/bank/.venv/bin/python /srv/bank/server.py"]
    assert "STUDIO_TOKEN" in server["env"]
