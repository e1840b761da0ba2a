"""The ASGI application answers as Django's own ASGI handler does, whichever chain a view takes.

``studio.asgi.StudioASGIHandler`` sends synchronous views through the synchronous middleware
chain (one thread hop) and async views (the guard's waiting poll) through the async one; the
answers must not depend on that choice: same status, same headers, same body.
"""

from __future__ import annotations

import asyncio
import re

import pytest
from asgiref.testing import ApplicationCommunicator
from django.core.handlers.asgi import ASGIHandler
from django.urls import get_resolver

from studio.asgi import StudioASGIHandler, view_is_async

pytestmark = pytest.mark.django_db(transaction=True)  # views run in threads of their own

# Headers that differ between any two answers (a fresh token, the clock).
VARYING = {b"set-cookie", b"date", b"content-length"}
# Masked CSRF tokens differ in every answer, in forms and in htmx's headers.
CSRF_TOKEN = re.compile(rb'(csrfmiddlewaretoken" value="|"X-CSRFToken": ")[^"]+"')


def _ask(application, method: str, path: str, body: bytes = b"",
         headers: list[tuple[bytes, bytes]] | None = None) -> tuple[int, dict, bytes]:
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"", "root_path": "", "client": ("127.0.0.1", 40000),
             "server": ("testserver", 80),
             "headers": [(b"host", b"testserver"), *(headers or [])]}

    async def exchange():
        communicator = ApplicationCommunicator(application, scope)
        await communicator.send_input({"type": "http.request", "body": body,
                                       "more_body": False})
        start = await communicator.receive_output(timeout=30)
        parts = []
        while True:
            message = await communicator.receive_output(timeout=30)
            parts.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        await communicator.wait(timeout=5)
        return (start["status"], {k.lower(): v for k, v in start["headers"]},
                b"".join(parts))

    return asyncio.run(exchange())


REQUESTS = [
    ("GET", "/healthz", b"", None),
    ("GET", "/accounts/login/", b"", None),
    ("GET", "/no/such/page/", b"", None),
    ("POST", "/accounts/login/", b"username=a&password=b", [(b"content-type",
                                                      b"application/x-www-form-urlencoded")]),
    ("GET", "/api/w/nowhere/uploads", b"", None),
    # The guard's waiting poll: an async view (no token: refused before it waits).
    ("GET", "/api/w/nowhere/live/sessions/s1/guard/1", b"", None),
]


@pytest.mark.parametrize("method,path,body,headers", REQUESTS)
def test_an_answer_is_the_one_djangos_asgi_handler_gives(method, path, body, headers):
    ours = _ask(StudioASGIHandler(), method, path, body, headers)
    django_s = _ask(ASGIHandler(), method, path, body, headers)

    status, our_headers, our_body = ours
    assert status == django_s[0]
    assert {k: v for k, v in our_headers.items() if k not in VARYING} == {
        k: v for k, v in django_s[1].items() if k not in VARYING}
    assert CSRF_TOKEN.sub(b"", our_body) == CSRF_TOKEN.sub(b"", django_s[2])


def test_only_the_waiting_poll_is_served_by_an_async_view():
    # The chain a request takes follows its view; today one view waits.
    async_routes = []

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if hasattr(pattern, "url_patterns"):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif view_is_async_callback(pattern.callback):
                async_routes.append(prefix + str(pattern.pattern))

    walk(get_resolver().url_patterns)
    assert async_routes == ["api/w/<slug>/live/sessions/<session_id>/guard/<decision_id>"]
    assert view_is_async("/api/w/acme/live/sessions/s-1/guard/7")
    assert not view_is_async("/api/w/acme/live/sessions/s-1/guard")
    assert not view_is_async("/healthz")
    assert not view_is_async("/no/such/page/")


def view_is_async_callback(callback) -> bool:
    from asgiref.sync import iscoroutinefunction

    return iscoroutinefunction(callback)
