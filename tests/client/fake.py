"""A tiny stand-in for the studio's live routes: ``http.server`` in a thread, answering from a
script per route and recording every request, so the client is tested over real HTTP."""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Recorded:
    def __init__(self, method: str, path: str, query: dict, headers: dict, raw: bytes):
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.raw = raw
        self.body = json.loads(raw) if raw else None

    def __repr__(self):
        return f"<{self.method} {self.path} {self.body}>"


class FakeStudio:
    """``route(method, pattern, responder)``: a request whose path matches ``pattern`` at its
    end is answered by ``responder`` - a callable ``(request) -> (status, body[, headers])``, or
    a list of such tuples taken in order (the last one repeats).  Unrouted events are stored
    (200, one step each); anything else is 404."""

    def __init__(self):
        self.requests: list[Recorded] = []
        self.routes: list[tuple[str, re.Pattern, object]] = []
        self.steps = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                fake._handle(self, "GET")

            def do_POST(self):
                fake._handle(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def route(self, method: str, pattern: str, responder):
        if isinstance(responder, list):
            queue = list(responder)

            def responder(_request, queue=queue):
                return queue.pop(0) if len(queue) > 1 else queue[0]
        self.routes.insert(0, (method, re.compile(pattern + "$"), responder))

    def of(self, suffix: str, method: str = "POST") -> list[Recorded]:
        return [r for r in self.requests if r.method == method and r.path.endswith(suffix)]

    def _handle(self, handler: BaseHTTPRequestHandler, method: str):
        parsed = urllib.parse.urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        request = Recorded(method, parsed.path, dict(urllib.parse.parse_qsl(parsed.query)),
                           {k.lower(): v for k, v in handler.headers.items()}, raw)
        self.requests.append(request)
        for route_method, pattern, responder in self.routes:
            if route_method == method and pattern.search(parsed.path):
                answer = responder(request)
                break
        else:
            answer = self._stored(request) if parsed.path.endswith("/events") else (
                404, {"detail": "not found"})
        status, body, *rest = answer
        headers = rest[0] if rest else {}
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json" if not isinstance(body, bytes)
                            else "text/html")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _stored(self, request: Recorded):
        items = []
        for index, event in enumerate(request.body["events"]):
            items.append({"index": index, "event_id": event.get("event_id"), "status": "stored",
                          "step": self.steps, "changes": []})
            self.steps += 1
        return 200, {"session": "s1", "steps": self.steps, "stored": len(items),
                     "duplicates": 0, "rejected": 0, "rebuilt": False, "events": items,
                     "rules": []}


def answer(decision: str, **extra) -> dict:
    """A guard answer in the contract's shape."""
    body = {"decision_id": "d", "decision": decision, "status": "decided", "candidate": None,
            "reason": f"because {decision}", "risk": {"pay": 0.5}, "risk_any": 0.5,
            "predictor": "exact", "horizon": 3, "threshold": 0.2, "backed": True,
            "rules_at_risk": [], "inject": None, "model": None, "poll": None}
    body.update(extra)
    return body
