"""A local stand-in for the OpenAI API, for the integration tests: ``/v1/chat/completions``
answers a conversation with no tool result yet with a call of the ``refund`` tool, and one
that has the tool's result with a final answer - as the real API shapes them (non-streaming)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REFUND_ARGUMENTS = {"order": 7, "amount": 20}
FINAL_ANSWER = "Your refund of $20 is on its way."


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - the standard library's name
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._answer(404, {"error": {"message": f"no route {self.path}"}})
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.server.requests.append(body)
        if not any(m.get("role") == "tool" for m in body.get("messages", [])):
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_refund_1", "type": "function",
                "function": {"name": "refund", "arguments": json.dumps(REFUND_ARGUMENTS)}}]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": FINAL_ANSWER}
            finish = "stop"
        self._answer(200, {
            "id": f"chatcmpl-{len(self.server.requests)}", "object": "chat.completion",
            "created": 1_760_000_000, "model": body.get("model", "gpt-4o-mini"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}})

    def _answer(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):  # quiet
        pass


class StandInOpenAI:
    """The server on a free loopback port, in a thread; ``url`` is the client's base URL."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.requests = []
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    @property
    def requests(self) -> list[dict]:
        return self._server.requests

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
