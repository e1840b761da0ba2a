"""A stand-in OpenAI model server for the integration tests: ``POST /v1/chat/completions`` answered
by a script (a function of the conversation so far), over real HTTP, so the real ``openai`` and
``openai-agents`` clients talk to it as they would to the real API.  It keeps every request body
it got, to check what the model was told."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Script = Callable[[list[dict]], dict]  # messages -> {"content": ...} or {"tool": ..., "args": ...}


class ChatServer:
    def __init__(self, script: Script):
        self.script = script
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._answer(404, {"error": {"message": f"no route {self.path}"}})
                    return
                server.requests.append(body)
                self._answer(200, completion(body, server.script(body["messages"])))

            def _answer(self, status, document):
                raw = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args):  # quiet
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def tool_messages(self) -> list[str]:
        """The tool results the model was sent (the last request holds them all)."""
        last = self.requests[-1]["messages"] if self.requests else []
        return [m.get("content") for m in last if m.get("role") == "tool"]


def completion(request: dict, turn: dict) -> dict:
    """A chat.completion document: the scripted turn as a tool call or a text answer."""
    if "tool" in turn:
        message = {"role": "assistant", "content": turn.get("content"), "tool_calls": [{
            "id": f"call_{uuid.uuid4().hex[:16]}", "type": "function",
            "function": {"name": turn["tool"], "arguments": json.dumps(turn["args"])}}]}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": turn["content"]}
        finish = "stop"
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
            "created": int(time.time()), "model": request.get("model", "stand-in"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def tool_results(messages: list[dict]) -> dict[str, str]:
    """The results the conversation holds so far, by tool name (the last one of each name)."""
    names = {call["id"]: call["function"]["name"]
             for m in messages if m.get("role") == "assistant"
             for call in m.get("tool_calls") or ()}
    return {names.get(m.get("tool_call_id"), "?"): m.get("content")
            for m in messages if m.get("role") == "tool"}


def payments_agent(messages: list[dict]) -> dict:
    """Pays bob at once; told that the payment was refused, checks the balance, then pays."""
    results = tool_results(messages)
    if "send_money" in results and "refused" not in results["send_money"]:
        return {"content": "Sent 50 to bob."}
    if "get_balance" in results:
        return {"tool": "send_money", "args": {"to": "bob", "amount": 50}}
    if "send_money" in results:  # refused: the model read why
        return {"content": "Checking first.", "tool": "get_balance", "args": {"account": "me"}}
    return {"tool": "send_money", "args": {"to": "bob", "amount": 50}}
