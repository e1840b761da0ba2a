"""An OpenAI Agents SDK agent behind the studio's guard: each tool call the agent's model asks for
is asked of the guard before the tool runs (a tool input guardrail of the SDK), and the run's
steps - the user's turn, the calls that ran, their results, the final answer - are recorded as
live events of one session.  A refused call does not run: the model reads the rule's reason in
its place and proposes again; a stop ends the run and the session.

Set up a workspace with an approved rule that a payment needs a balance check first:

    !tool_call:send_money W tool_call:get_balance

and a token for it (the workspace's Tokens page), then run, from the repository's root:

    pip install openai-agents
    STUDIO_URL=http://127.0.0.1:8000 STUDIO_WORKSPACE=acme STUDIO_TOKEN=<token> \\
        python examples/openai_agents_loop.py [--session ID] [--no-guard]

``--no-guard`` only records the events (the payment runs; the studio says the rule is violated).
No OpenAI key is needed: a scripted stand-in model server on 127.0.0.1 answers the SDK's chat
completions.  Its first impulse is to pay before checking the balance; told the payment was
refused, it checks the balance, then pays.  With ``OPENAI_API_KEY`` set, a real model
(``OPENAI_MODEL``, default gpt-4o-mini) answers instead.  ``examples/openai_tool_loop.py`` is the
same agent as a hand-written tool loop.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig,
                    function_tool)
from openai import AsyncOpenAI

try:
    from studio.client import GuardStopped, StudioClient, StudioError
    from studio.client.openai_agents import AgentGuard
except ImportError:  # run from a checkout without installing it
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from studio.client import GuardStopped, StudioClient, StudioError
    from studio.client.openai_agents import AgentGuard

INSTRUCTIONS = ("You are a payments assistant. Use the tools to do what the user asks, then "
                "answer in one sentence.")
TASK = "Send 50 to bob from my account."


# ---------------------------------------------------------------------------------------------
# The tools (pretend ones)

class Bank:
    def __init__(self, balance: float = 120.0):
        self.balance = balance
        self.calls: list[tuple[str, dict]] = []  # every tool call that actually ran

        @function_tool
        def get_balance(account: str) -> str:
            """The balance of an account."""
            self.calls.append(("get_balance", {"account": account}))
            return json.dumps({"account": account, "balance": self.balance})

        @function_tool
        def send_money(to: str, amount: float) -> str:
            """Send money from the user's account."""
            self.calls.append(("send_money", {"to": to, "amount": amount}))
            self.balance -= amount
            return json.dumps({"sent": amount, "to": to, "balance": self.balance})

        self.tools = [get_balance, send_money]


# ---------------------------------------------------------------------------------------------
# A stand-in model: an HTTP server answering POST /v1/chat/completions, scripted

def stand_in_turn(messages: list[dict]) -> dict:
    """Pays at once; told the payment was refused, checks the balance first, then pays."""
    names = {call["id"]: call["function"]["name"]
             for m in messages if m.get("role") == "assistant"
             for call in m.get("tool_calls") or ()}
    results = {names.get(m.get("tool_call_id")): str(m.get("content"))
               for m in messages if m.get("role") == "tool"}
    if "send_money" in results and "refused" not in results["send_money"]:
        balance = json.loads(results["send_money"]).get("balance")
        return {"content": f"Sent 50 to bob; the balance is now {balance:g}."}
    if "get_balance" in results:
        return {"tool": "send_money", "args": {"to": "bob", "amount": 50}}
    if "send_money" in results:  # refused: it read why
        return {"tool": "get_balance", "args": {"account": "me"}}
    return {"tool": "send_money", "args": {"to": "bob", "amount": 50}}


class StandInServer:
    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                turn = stand_in_turn(body.get("messages") or [])
                message = {"role": "assistant", "content": turn.get("content")}
                if "tool" in turn:
                    message["tool_calls"] = [{
                        "id": f"call_{uuid.uuid4().hex[:16]}", "type": "function",
                        "function": {"name": turn["tool"], "arguments": json.dumps(turn["args"])}}]
                raw = json.dumps({
                    "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
                    "created": int(time.time()), "model": body.get("model", "stand-in"),
                    "choices": [{"index": 0, "message": message,
                                 "finish_reason": "tool_calls" if "tool" in turn else "stop"}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def make_agent(bank: Bank, model) -> Agent:
    return Agent(name="payments", instructions=INSTRUCTIONS, tools=bank.tools, model=model,
                 model_settings=ModelSettings(parallel_tool_calls=False))


def run(client: StudioClient, session: str, *, guarded: bool = True, model=None,
        bank: Bank | None = None, log=print) -> dict:
    """Runs the agent to its answer (or the guard's stop); the session is ended either way.
    ``model`` is an SDK model or a model name (default: the stand-in server)."""
    bank = bank or Bank()
    server = None
    if model is None:
        server = StandInServer()
        model = OpenAIChatCompletionsModel(
            model="stand-in", openai_client=AsyncOpenAI(base_url=server.url, api_key="unused"))
    guard = AgentGuard(client, session, guard=guarded, log=log)
    stopped, answer = None, None
    try:
        result = guard.run_sync(make_agent(bank, model), TASK,
                                run_config=RunConfig(tracing_disabled=server is not None))
        answer = result.final_output
    except GuardStopped as stop:
        stopped = stop.reason
        log(f"guard: stop - {stop.reason}")
    finally:
        if server is not None:
            server.close()
    return {"executed": bank.calls, "stopped": stopped, "answer": answer,
            "refused": guard.refused, "events": guard.events, "end": guard.end_answer}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--session", default=f"agents-loop-{uuid.uuid4().hex[:8]}",
                        help="the live session's id (default: a new one)")
    parser.add_argument("--no-guard", action="store_true",
                        help="only record the events; ask the guard nothing")
    args = parser.parse_args(argv)
    env = os.environ
    if "STUDIO_WORKSPACE" not in env or not (env.get("STUDIO_TOKEN")
                                             or env.get("STUDIO_WEBHOOK_SECRET")):
        parser.error("set STUDIO_WORKSPACE and STUDIO_TOKEN (or STUDIO_WEBHOOK_SECRET)")
    client = StudioClient(env.get("STUDIO_URL", "http://127.0.0.1:8000"),
                          env["STUDIO_WORKSPACE"], token=env.get("STUDIO_TOKEN"),
                          webhook_secret=env.get("STUDIO_WEBHOOK_SECRET"))
    model = env.get("OPENAI_MODEL", "gpt-4o-mini") if env.get("OPENAI_API_KEY") else None
    print(f"session {args.session}, model {model or 'stand-in'}")
    try:
        result = run(client, args.session, guarded=not args.no_guard, model=model)
    except StudioError as exc:
        print(f"the studio refused: {exc}", file=sys.stderr)
        return 2
    print("tools that ran:", ", ".join(name for name, _ in result["executed"]) or "none")
    return 1 if result["stopped"] else 0


if __name__ == "__main__":
    sys.exit(main())
