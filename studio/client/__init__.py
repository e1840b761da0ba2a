"""The agent's side of the live API: a small client in plain Python (standard library only, no
Django), so an agent project can copy this folder as it is.

    from studio.client import GuardedSession, GuardStopped, StudioClient

    client = StudioClient("https://studio.example", "acme", token="...")
    client.send_events("run-42", [{"output": {"tool": "search", "args": {"q": "x"}}}])

    session = GuardedSession(client, "run-42")
    try:
        taken = session.step(lambda hint, model: {"output": {"tool": "send_money",
                                                             "args": {"amount": 5}}})
    except GuardStopped as stop:
        print("not taken:", stop.reason)

See ``core`` (the routes, retries and errors) and ``guarded`` (how each decision is applied);
``examples/openai_tool_loop.py`` guards an OpenAI-style tool-calling loop.  With the OpenAI
Agents SDK installed, ``studio.client.openai_agents`` (imported on its own) puts the guard in
front of an SDK agent's tool calls (``examples/openai_agents_loop.py``).
"""

from .core import StudioClient, retry_after_seconds, sign
from .errors import DecisionPending, GuardStopped, StudioError
from .guarded import DECISIONS, GuardedSession, Proposal, StepResult
from .words import change_words, end_words

__all__ = ["DECISIONS", "DecisionPending", "GuardStopped", "GuardedSession", "Proposal",
           "StepResult", "StudioClient", "StudioError", "change_words", "end_words",
           "retry_after_seconds", "sign"]
