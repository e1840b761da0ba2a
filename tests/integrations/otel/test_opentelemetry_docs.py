"""The snippets of docs/integrations/opentelemetry.md, read from the page and run as a reader
would - a Python process of their own, with STUDIO_URL and STUDIO_TOKEN set, the OpenAI client
pointed at the local stand-in server - against a live test server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from studio.traces.models import Event, TraceSession

from .standin_openai import FINAL_ANSWER, REFUND_ARGUMENTS

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = Path(__file__).resolve().parents[3] / "docs" / "integrations" / "opentelemetry.md"


def snippet(name: str) -> str:
    """The Python block right after ``<!-- snippet: NAME -->`` on the page."""
    found = re.search(rf"<!-- snippet: {name} -->\n```python\n(.*?)\n```", PAGE.read_text(),
                      re.S)
    assert found, f"no snippet {name!r} on {PAGE.name}"
    return found.group(1)


@pytest.mark.parametrize(("name", "session"), [("openinference", "refund-42"),
                                                ("genai", "refund-43")])
def test_the_snippet_runs_and_its_trace_is_one_session(live_server, workspace, token,
                                                       openai_server, name, session):
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("OTEL_", "OPENAI_"))}
    env |= {"STUDIO_URL": live_server.url, "STUDIO_TOKEN": token,
            "OPENAI_BASE_URL": openai_server.url, "OPENAI_API_KEY": "test-key"}
    done = subprocess.run([sys.executable, "-c", snippet(name)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == FINAL_ANSWER
    assert list(TraceSession.objects.values_list("external_id", flat=True)) == [session]
    events = list(Event.objects.filter(session__external_id=session).order_by("step")
                  .values_list("output", "data"))
    # One export request (a batch): in the order the spans started, the agent's first.
    assert len(events) == 4
    agent, requested, tool, answer = events
    assert agent[1]["name"].startswith(("refund-agent", "invoke_agent"))
    assert [c["name"] for c in requested[1]["tool_calls"]] == ["refund"]
    assert tool[0] == {"tool": "refund", "args": REFUND_ARGUMENTS}
    assert tool[1]["tool_result"] == "refunded 20 USD"
    assert answer[0] == FINAL_ANSWER
