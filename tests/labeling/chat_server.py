"""A local OpenAI-compatible endpoint for the tests: ``POST /v1/chat/completions`` on 127.0.0.1,
answering from a script (one reply per request, in order) and then from a responder function,
and keeping every request it received."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    """One answer: a completion whose message is ``content``, or ``status`` with ``body``."""

    content: str | None = None
    status: int = 200
    headers: dict = field(default_factory=dict)
    body: str | None = None          # sent as is instead of a completion
    delay: float = 0.0               # seconds to wait before answering
    prompt_tokens: int = 10
    completion_tokens: int = 5


class ChatServer:
    def __init__(self, responder: Callable[[dict], Reply | str] | None = None):
        self.script: deque[Reply | str] = deque()
        self.responder = responder
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the http.server spelling
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                if self.path != "/v1/chat/completions":
                    self._send(404, {}, json.dumps({"error": {"message": "no such route"}}))
                    return
                request = json.loads(body)
                with server._lock:
                    server.requests.append(request)
                    server.headers.append(dict(self.headers))
                    reply = server.script.popleft() if server.script else None
                if reply is None:
                    reply = server.responder(request) if server.responder else Reply("")
                if isinstance(reply, str):
                    reply = Reply(reply)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.body is not None or reply.status != 200:
                    self._send(reply.status, reply.headers, reply.body or "")
                    return
                self._send(200, reply.headers, json.dumps({
                    "id": "chatcmpl-test", "object": "chat.completion",
                    "model": request.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply.content}}],
                    "usage": {"prompt_tokens": reply.prompt_tokens,
                              "completion_tokens": reply.completion_tokens,
                              "total_tokens": reply.prompt_tokens + reply.completion_tokens}}))

            def _send(self, status, headers, text):
                data = text.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the timeout tests)

            def log_message(self, *args):  # keep the test output quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def add(self, *replies: Reply | str) -> None:
        with self._lock:
            self.script.extend(replies)

    def start(self) -> "ChatServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


STEP = re.compile(r'<step number="(\d+)">\n(.*?)\n</step>', re.DOTALL)


def keyword_labeler(keyword: str, confidence: float = 0.82) -> Callable[[dict], Reply]:
    """A model for the LLM labeler: the atom holds at each step whose text has ``keyword``."""

    def respond(request: dict) -> Reply:
        prompt = request["messages"][-1]["content"]
        answers = [{"step": int(n), "holds": keyword in text, "confidence": confidence}
                   for n, text in STEP.findall(prompt)]
        return Reply(json.dumps({"answers": answers}), prompt_tokens=100 * len(answers),
                     completion_tokens=12 * len(answers))

    return respond
