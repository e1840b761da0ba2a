"""``StudioClient``: the live routes of one workspace over HTTP, with the standard library only.

Every request is JSON, authenticated by a bearer token or signed as a Standard Webhooks delivery
(``webhook-id``, ``webhook-timestamp``, ``webhook-signature: v1,<base64 HMAC-SHA256 of
"{id}.{timestamp}.{body}">``).  A 429 or 503 stored nothing; the client waits as long as its
Retry-After says and sends the same request again, a bounded number of times (a signed request
keeps its webhook-id, so the server knows the redelivery; a guard question keeps its decision
id).  Any other refusal raises ``StudioError`` with the problem's status, detail and field.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import email.utils
import hashlib
import hmac
import json
import math
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Generator, Sequence
from typing import Any

from .errors import StudioError

RETRY_STATUSES = (429, 503)
LONG_POLL_MAX_SECONDS = 30  # the server's limit for ?wait=
USER_AGENT = "studio-client/1"


def sign(secret: str, msg_id: str, stamp: int | str, body: bytes) -> str:
    """A ``webhook-signature`` value: ``v1,`` and the base64 HMAC-SHA256 of
    ``{msg_id}.{stamp}.{body}`` under the ``whsec_`` secret (its base64 part is the key)."""
    try:
        key = base64.b64decode(secret.removeprefix("whsec_"), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("a webhook secret is whsec_ followed by base64") from None
    digest = hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: a whole number of seconds, or an HTTP date (RFC 9110)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


class StudioClient:
    """The live API of one workspace.

    ``token`` (a bearer token of the workspace) or ``webhook_secret`` (``whsec_...``) - one of
    them.  ``retries`` is how many times a 429 or 503 is retried; a Retry-After longer than
    ``max_retry_wait`` seconds is not waited for (the StudioError carries it).  ``sleep`` is
    ``time.sleep``, replaceable in tests.
    """

    def __init__(self, base_url: str, workspace_slug: str, token: str | None = None,
                 webhook_secret: str | None = None, timeout: float = 10, *, retries: int = 3,
                 max_retry_wait: float = 60, sleep: Callable[[float], None] = time.sleep):
        if not token and not webhook_secret:
            raise ValueError("a token or a webhook secret is needed")
        if webhook_secret:
            sign(webhook_secret, "check", 0, b"")  # a malformed secret fails here, not later
        self.base_url = base_url.rstrip("/")
        self.workspace_slug = workspace_slug
        self.token = token
        self.webhook_secret = webhook_secret
        self.timeout = timeout
        self.retries = retries
        self.max_retry_wait = max_retry_wait
        self.sleep = sleep
        self._proxy_use: dict[tuple[str, str], bool] = {}

    # -----------------------------------------------------------------------------------------
    # The routes

    def send_events(self, session: str, events: Sequence[dict]) -> dict:
        """Store events (in order) and get back, per event, its step and verdict changes, and
        per rule its verdict and residual.  A partly refused batch (207) is returned (its
        ``rejected`` counts the refusals, each named in ``events``); a batch refused whole
        raises StudioError naming the first refusal."""
        return self._post(self._session_path(session, "events"), {"events": list(events)})

    def check(self, session: str, candidates: Sequence[dict]) -> dict:
        """Would each candidate next event violate a rule now?  Stores nothing."""
        return self._post(self._session_path(session, "check"),
                          {"candidates": list(candidates)})

    def guard(self, session: str, event: dict, continuation: Sequence[dict] | None = None,
              candidates: Sequence[dict] | None = None, decision_id: str | None = None,
              attempt: int = 0, taken: Sequence[dict] | None = None,
              store_taken: bool = True) -> dict:
        """Ask the guard about a proposed next event; stores nothing (post the event actually
        taken with ``send_events``).  ``candidates`` are other sampled next events, each
        ``{"event": ..., "continuation": [...]}``.  Without a ``decision_id`` one is made up, so
        that a retried request gets the same answer.

        ``taken``: events the agent took before this one that may not be stored yet (at most
        64, each with its ``event_id``): the guard decides as if they were, and the studio
        stores them after answering.  The answer's ``stored`` lists those it had stored
        already; keep the others until a later answer (or ``send_events``) confirms them.
        ``store_taken=False``: the studio decides on them but leaves them to be stored later (a
        later question that stores, or ``send_events``), so that an agent stores in batches."""
        return self._post(self._session_path(session, "guard"),
                          _guard_body(event, continuation, candidates, decision_id, attempt,
                                      taken, store_taken))

    async def guard_async(self, session: str, event: dict,
                          continuation: Sequence[dict] | None = None,
                          candidates: Sequence[dict] | None = None,
                          decision_id: str | None = None, attempt: int = 0,
                          taken: Sequence[dict] | None = None,
                          store_taken: bool = True) -> dict:
        """``guard`` for an asyncio program: the request is made on the event loop (no thread
        waits for it), with the same retries and errors."""
        return await self._request_async(
            "POST", self._session_path(session, "guard"),
            _guard_body(event, continuation, candidates, decision_id, attempt, taken,
                        store_taken))

    def decision(self, session: str, decision_id: str, wait: float = 0) -> dict:
        """A guard decision as it stands, waiting up to ``wait`` seconds (at most 30) while a
        human has not answered."""
        wait = max(0, min(LONG_POLL_MAX_SECONDS, int(wait)))
        path = self._session_path(session, "guard", decision_id)
        return self._request("GET", path, query={"wait": wait}, timeout=self.timeout + wait)

    def wait_for_decision(self, session: str, decision_id: str, timeout: float) -> dict:
        """Long-polls a pending decision until a human answered, the server's own timeout
        applied, or ``timeout`` seconds passed; returns the last answer (its ``status`` is
        still ``pending`` in the last case)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            started = time.monotonic()
            answer = self.decision(session, decision_id, wait=max(0, math.floor(remaining)))
            if answer.get("status") != "pending":
                return answer
            remaining = deadline - time.monotonic()
            if remaining < 1:
                return answer
            # A server that answers at once (no long poll) is asked again a second later, not
            # in a tight loop.
            if time.monotonic() - started < 1:
                self.sleep(1)

    def end(self, session: str) -> dict:
        """End the session: every rule gets its end verdict; later events are refused (409)."""
        return self._post(self._session_path(session, "end"), {})

    def rules(self) -> list[dict]:
        """The workspace's rules (each with its ``name``, ``description`` and versions), for
        naming a rule in words: ``GET /api/w/{slug}/rules``."""
        path = "/" + "/".join(urllib.parse.quote(p, safe="")
                              for p in ("api", "w", self.workspace_slug, "rules"))
        answer = self._request("GET", path)
        return answer if isinstance(answer, list) else []

    # -----------------------------------------------------------------------------------------
    # HTTP

    def _session_path(self, session: str, *rest: str) -> str:
        parts = ["api", "w", self.workspace_slug, "live", "sessions", session, *rest]
        return "/" + "/".join(urllib.parse.quote(str(p), safe="") for p in parts)

    def _post(self, path: str, body: dict) -> dict:
        return self._request("POST", path, body)

    def _request(self, method: str, path: str, body: dict | None = None, *,
                 query: dict | None = None, timeout: float | None = None) -> dict:
        url, raw, msg_id = self._prepared(path, body, query)
        plan = self._attempts()
        step = next(plan)
        try:
            while True:
                if step is None:
                    step = plan.send(self._send(method, url, raw, msg_id, timeout))
                else:
                    self.sleep(step)
                    step = next(plan)
        except StopIteration as done:
            return done.value

    async def _request_async(self, method: str, path: str, body: dict | None = None, *,
                             query: dict | None = None, timeout: float | None = None) -> dict:
        url, raw, msg_id = self._prepared(path, body, query)
        plan = self._attempts()
        step = next(plan)
        try:
            while True:
                if step is None:
                    step = plan.send(await self._send_async(method, url, raw, msg_id, timeout))
                else:
                    await asyncio.sleep(step)
                    step = next(plan)
        except StopIteration as done:
            return done.value

    def _prepared(self, path: str, body: dict | None, query: dict | None
                  ) -> tuple[str, bytes, str]:
        raw = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        msg_id = f"msg_{uuid.uuid4().hex}"  # kept by the retries: a redelivery, not another
        return url, raw, msg_id

    def _attempts(self) -> Generator[float | None, tuple[int, Any, Any], dict]:
        """The retries, without the I/O: yields None for "send the request now" and is sent
        its (status, headers, answer), or yields the seconds to wait before sending it again;
        returns the answer, or raises StudioError."""
        for attempt in range(self.retries + 1):
            status, headers, answer = yield None
            if 200 <= status < 300:
                return answer if isinstance(answer, (dict, list)) else {}
            wait = retry_after_seconds(headers.get("Retry-After"))
            if (status in RETRY_STATUSES and attempt < self.retries
                    and (wait is None or wait <= self.max_retry_wait)):
                yield 1.0 if wait is None else wait
                continue
            raise _error(status, answer, wait)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _headers(self, method: str, raw: bytes, msg_id: str) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if method != "GET":
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        else:
            stamp = str(int(time.time()))  # signed afresh: a retry may come seconds later
            headers["webhook-id"] = msg_id
            headers["webhook-timestamp"] = stamp
            headers["webhook-signature"] = sign(self.webhook_secret, msg_id, stamp, raw)
        return headers

    def _send(self, method: str, url: str, raw: bytes, msg_id: str, timeout: float | None):
        request = urllib.request.Request(url, data=raw if method != "GET" else None,
                                         headers=self._headers(method, raw, msg_id),
                                         method=method)
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                return response.status, response.headers, _json(response.read())
        except urllib.error.HTTPError as exc:
            try:
                return exc.code, exc.headers, _json(exc.read())
            finally:
                exc.close()
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise StudioError(None, f"{method} {url} got no answer: {reason}") from exc

    def _proxied(self, parts: urllib.parse.SplitResult) -> bool:
        """Whether urllib would send this request through a proxy (asked once per scheme and
        host: reading the environment costs more than the rest of a request's set-up)."""
        key = (parts.scheme, parts.hostname or "")
        found = self._proxy_use.get(key)
        if found is None:
            found = (parts.scheme in urllib.request.getproxies()
                     and not urllib.request.proxy_bypass(key[1]))
            self._proxy_use[key] = found
        return found

    async def _send_async(self, method: str, url: str, raw: bytes, msg_id: str,
                          timeout: float | None):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or self._proxied(parts):
            # What urllib does for a proxy is urllib's: it makes the request, in a thread.
            return await asyncio.to_thread(self._send, method, url, raw, msg_id, timeout)
        try:
            return await asyncio.wait_for(
                _exchange(parts, method, raw, self._headers(method, raw, msg_id)),
                timeout or self.timeout)
        except (OSError, EOFError, ValueError, asyncio.LimitOverrunError) as exc:
            # (TimeoutError is an OSError, a connection closed mid-answer an EOFError.)
            reason = str(exc) or type(exc).__name__
            raise StudioError(None, f"{method} {url} got no answer: {reason}") from exc


def _guard_body(event: dict, continuation: Sequence[dict] | None,
                candidates: Sequence[dict] | None, decision_id: str | None, attempt: int,
                taken: Sequence[dict] | None, store_taken: bool = True) -> dict:
    body: dict[str, Any] = {"event": event, "decision_id": decision_id or uuid.uuid4().hex,
                            "attempt": attempt}
    if continuation is not None:
        body["continuation"] = list(continuation)
    if candidates is not None:
        body["candidates"] = list(candidates)
    if taken:
        body["taken"] = list(taken)
        if not store_taken:
            body["store_taken"] = False
    return body




async def _exchange(parts: urllib.parse.SplitResult, method: str, raw: bytes,
                    headers: dict[str, str]) -> tuple[int, _Headers, Any]:
    """One HTTP/1.1 request on a connection of its own (``Connection: close``, as urllib
    makes it): (status, headers, the body read as JSON)."""
    secure = parts.scheme == "https"
    reader, writer = await asyncio.open_connection(
        parts.hostname, parts.port or (443 if secure else 80),
        ssl=ssl.create_default_context() if secure else None)
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc.rpartition('@')[2]}",
                 "Connection: close", *(f"{name}: {value}" for name, value in headers.items())]
        if method != "GET":
            lines.append(f"Content-Length: {len(raw)}")
        writer.write("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n"
                     + (raw if method != "GET" else b""))
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status_line, _, header_block = head.partition(b"\r\n")
        fields = status_line.split(None, 2)
        if len(fields) < 2 or not fields[0].startswith(b"HTTP/") or not fields[1].isdigit():
            raise ValueError(f"not an HTTP answer: {status_line[:80]!r}")
        message = _Headers.parse(header_block)
        if "chunked" in message.get("Transfer-Encoding", "").lower():
            body = await _read_chunked(reader)
        elif message.get("Content-Length", "").strip().isdigit():
            body = await reader.readexactly(int(message.get("Content-Length")))
        else:
            body = await reader.read()
        return int(fields[1]), message, _json(body)
    finally:
        writer.close()


class _Headers(dict):
    """An answer's header fields, looked up by name in any case (``get``), as urllib's are."""

    @classmethod
    def parse(cls, block: bytes) -> _Headers:
        headers = cls()
        for line in block.decode("latin-1").split("\r\n"):
            name, colon, value = line.partition(":")
            if colon:
                headers[name.strip().lower()] = value.strip()
        return headers

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":   # trailers, then a blank line
                pass
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)


def _json(data: bytes) -> Any:
    try:
        return json.loads(data) if data else None
    except ValueError:
        return data.decode("utf-8", "replace")[:500]


def _error(status: int, answer: Any, retry_after: float | None) -> StudioError:
    if isinstance(answer, dict) and "detail" in answer:
        return StudioError(status, str(answer["detail"]), answer.get("field"), answer,
                           retry_after)
    if isinstance(answer, dict) and isinstance(answer.get("events"), list):
        # A batch refused whole (422): the first refusal stands for the others.
        refused = [e for e in answer["events"] if e.get("status") == "error"]
        if refused:
            first = refused[0]
            more = f" (and {len(refused) - 1} more refused)" if len(refused) > 1 else ""
            return StudioError(status, f"event {first.get('index')}: {first.get('error')}{more}",
                               first.get("field"), answer, retry_after)
    text = answer if isinstance(answer, str) and answer else "no problem document"
    return StudioError(status, text, None, answer, retry_after)
