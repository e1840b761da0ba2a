"""What every live ingestion route does before the service: size limits (also after
decompression), who is posting (a bearer token or a Standard Webhooks signature), rate limits,
and reading the JSON.

The order matters: the raw body is read within the size limit, authenticated - a signature is
checked over exactly the bytes received, before anything parses them - then rate-limited, and
only then decompressed (in bounded chunks, so a gzip bomb costs at most the limit in memory) and
parsed.  Every refusal is an ``Refused`` carrying its status and headers.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
import zlib
from contextvars import ContextVar

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import RequestDataTooBig
from django.http.request import RawPostDataException
from django.db import InterfaceError, OperationalError, connection
from django.http import HttpRequest

from studio import boundary
from studio.workspaces.acting import Actor, no_roles_message
from studio.workspaces.models import WebhookSecret, Workspace
from studio.workspaces.tokens import acting_roles, find_token

DECOMPRESS_CHUNK = 64 * 1024
DELIVERY_ID_MAX = 150
DB_RETRY_AFTER_SECONDS = 5

# A connection that finished a live request this recently serves the next one without Django's
# health check (CONN_HEALTH_CHECKS: a "SELECT 1" round trip before the request's first query;
# skipping it measured 4% less worker CPU per live request, and one round trip less latency).
RECENT_CONNECTION_SECONDS = 1.0


class Refused(Exception):
    """A request refused before the service: status, message, extra headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def too_large(limit: int) -> Refused:
    return Refused(413, f"the request body is larger than {limit} bytes (also counted after "
                        "decompression)")


# ---------------------------------------------------------------------------------------------
# The body

def raw_body(request: HttpRequest) -> bytes:
    """The body as received, refused (413) past ``MAX_REQUEST_BYTES`` before it is read."""
    limit = settings.MAX_REQUEST_BYTES
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise Refused(400, "Content-Length must be a number") from None
    if length > limit:
        raise too_large(limit)
    try:
        body = request.body
    except RequestDataTooBig:
        raise too_large(limit) from None
    except RawPostDataException:  # a form, already read as one (studio.boundary)
        raise Refused(415, "this endpoint takes JSON (Content-Type: application/json), not a "
                           "form") from None
    if len(body) > limit:
        raise too_large(limit)
    return body


def decoded_body(request: HttpRequest, raw: bytes) -> bytes:
    """The body after its Content-Encoding (identity, gzip or deflate), never more than
    ``MAX_REQUEST_BYTES``: the decompressor hands out at most one chunk at a time."""
    encoding = (request.META.get("HTTP_CONTENT_ENCODING") or "identity").strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding in ("gzip", "x-gzip"):
        return _inflate(raw, 16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        try:
            return _inflate(raw, 32 + zlib.MAX_WBITS)  # zlib (RFC 9110's deflate) or gzip
        except Refused as exc:
            if exc.status != 400:
                raise
            return _inflate(raw, -zlib.MAX_WBITS)  # raw deflate, which some clients send
    raise Refused(415, f"unsupported Content-Encoding {encoding[:40]!r}; use gzip, deflate or "
                       "identity")


def _inflate(raw: bytes, wbits: int) -> bytes:
    limit = settings.MAX_REQUEST_BYTES
    out = bytearray()
    data = raw
    try:
        while data:
            inflater = zlib.decompressobj(wbits)
            while True:
                before = len(data)
                chunk = inflater.decompress(data, DECOMPRESS_CHUNK)
                out += chunk
                if len(out) > limit:
                    raise too_large(limit)
                data = inflater.unconsumed_tail
                if inflater.eof or (not chunk and len(data) in (0, before)):
                    break
            if not inflater.eof:
                raise Refused(400, "the compressed body is truncated")
            # gzip allows several members one after the other; anything else is an error.
            data = inflater.unused_data
            if data and wbits != 16 + zlib.MAX_WBITS:
                raise Refused(400, "data after the end of the compressed body")
    except zlib.error as exc:
        raise Refused(400, f"the body does not decompress ({exc})") from None
    return out  # a bytearray: the JSON parser reads it without another copy


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def parse_json(body: bytes):
    """The body's JSON; NUL, lone surrogates and nesting too deep are refused for the whole
    delivery (``boundary.loads``, a ServiceError naming the place)."""
    try:
        return boundary.loads(body, parse_constant=_refuse_constant)
    except UnicodeDecodeError:
        raise Refused(400, "the body is not UTF-8 text") from None
    except ValueError as exc:
        raise Refused(400, f"the body is not valid JSON ({exc})"[:300]) from None


# ---------------------------------------------------------------------------------------------
# Who is posting

def bearer_token(request: HttpRequest):
    """The ApiToken of an ``Authorization: Bearer`` header, or None."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return find_token(value.strip())


def has_signature(request: HttpRequest) -> bool:
    return "HTTP_WEBHOOK_SIGNATURE" in request.META


def verify_signature(request: HttpRequest, raw: bytes, workspace: Workspace) -> str:
    """The Standard Webhooks message id, when ``webhook-signature`` holds a valid ``v1`` HMAC
    of ``{id}.{timestamp}.{body}`` under one of the workspace's active secrets and the timestamp
    is within the tolerance; else Refused(401)."""
    meta = request.META
    msg_id = meta.get("HTTP_WEBHOOK_ID", "")
    stamp = meta.get("HTTP_WEBHOOK_TIMESTAMP", "")
    header = meta.get("HTTP_WEBHOOK_SIGNATURE", "")
    if not msg_id or not stamp or not header:
        raise Refused(401, "a signed delivery needs webhook-id, webhook-timestamp and "
                           "webhook-signature headers")
    if len(msg_id) > DELIVERY_ID_MAX:
        raise Refused(401, f"webhook-id is longer than {DELIVERY_ID_MAX} characters")
    if not stamp.isascii() or not stamp.isdigit() or len(stamp) > 12:
        raise Refused(401, "webhook-timestamp must be whole seconds since 1970")
    if abs(time.time() - int(stamp)) > settings.WEBHOOK_TOLERANCE_SECONDS:
        raise Refused(401, "webhook-timestamp is outside the tolerance "
                           f"({settings.WEBHOOK_TOLERANCE_SECONDS} s): stale or from the future")
    presented = []
    for item in header.split():
        version, _, value = item.partition(",")
        if version != "v1":
            continue
        try:
            presented.append(base64.b64decode(value, validate=True))
        except (binascii.Error, ValueError):
            continue
    signed = f"{msg_id}.{stamp}.".encode() + raw
    matched = False
    for secret in WebhookSecret.objects.filter(workspace=workspace, revoked_at__isnull=True
                                               ).values_list("secret", flat=True):
        key = _secret_key(secret)
        if key is None:
            continue
        expected = hmac.new(key, signed, hashlib.sha256).digest()
        for signature in presented:
            # Every pair is compared (no early exit): the time taken says nothing useful.
            matched |= hmac.compare_digest(expected, signature)
    if not matched:
        raise Refused(401, "no valid signature: webhook-signature must hold v1,<base64 "
                           "HMAC-SHA256> of '{webhook-id}.{webhook-timestamp}.{body}' under an "
                           "active webhook secret of the workspace")
    return msg_id


def _secret_key(secret: str) -> bytes | None:
    value = secret.removeprefix("whsec_")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def sign(secret: str, msg_id: str, stamp: int | str, body: bytes) -> str:
    """A ``webhook-signature`` value for a body (what senders, tests and the benchmark do)."""
    key = _secret_key(secret)
    if key is None:
        raise ValueError("not a whsec_ secret")
    digest = hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def authenticate(request: HttpRequest, raw: bytes, slug: str
                 ) -> tuple[Workspace, Actor | None, str | None]:
    """``(workspace, actor, delivery id)`` for a workspace route: a signed delivery (checked
    whenever it carries a signature) or a bearer token of that workspace.  An unknown workspace
    or a bad credential is 401; a token of another workspace is 404, as everywhere."""
    if has_signature(request):
        workspace = Workspace.objects.filter(slug=slug).first() if "\x00" not in slug else None
        if workspace is None:
            raise Refused(401, "no valid signature")  # says nothing about which slugs exist
        return workspace, None, verify_signature(request, raw, workspace)
    token = bearer_token(request)
    if token is None:
        raise Refused(401, "authentication required: a bearer token of the workspace, or a "
                           "Standard Webhooks signature")
    if token.workspace.slug != slug:
        raise Refused(404, "not found")
    require_roles(token)
    return token.workspace, Actor(token=token), None


def require_roles(token) -> None:
    """A token acting with no roles (its creator holds none of them now) posts nothing."""
    if not acting_roles(token):
        raise Refused(403, no_roles_message(token))


# ---------------------------------------------------------------------------------------------
# Rate limits

def check_rate(workspace: Workspace, actor: Actor | None) -> None:
    """A fixed one-minute window per token (per workspace for signed deliveries), counted in
    Django's cache; past ``LIVE_RATE_LIMIT_PER_MINUTE`` requests, 429 with Retry-After.  With
    the default local-memory cache each server process counts on its own; with ``CACHE_URL``
    (Redis) every process and host counts together.  A cache that fails lets requests through."""
    limit = settings.LIVE_RATE_LIMIT_PER_MINUTE
    if limit <= 0 or _rerunning.get():  # a rerun (on_recent_connection) was counted once
        return
    now = time.time()
    window = int(now // 60)
    who = f"t{actor.token.pk}" if actor is not None and actor.token is not None else "sig"
    key = f"live-rate:{workspace.pk}:{who}:{window}"
    try:
        cache.add(key, 0, timeout=120)
        count = cache.incr(key)
    except Exception:  # noqa: BLE001 - a broken cache must not stop ingestion
        return
    if count > limit:
        retry = max(1, int(60 - now % 60) + 1)
        raise Refused(429, f"more than {limit} requests this minute; retry in {retry} s",
                      {"Retry-After": str(retry)})


# True while on_recent_connection runs a request again, which the rate limit counted already.
_rerunning: ContextVar[bool] = ContextVar("live_request_rerun", default=False)


def on_recent_connection(run):
    """``run()``, skipping the health check of a connection that finished a live request less
    than ``RECENT_CONNECTION_SECONDS`` ago.  If Postgres dropped it meanwhile (a restart, say),
    the request fails at its first query and runs once more on a new connection, as the check
    would have made it: the failed transaction stored nothing, and deliveries are idempotent by
    event id."""
    used = connection.connection
    skipped = _skip_health_check()
    try:
        answer = run()
    except (OperationalError, InterfaceError):
        # Dropped: Django closed it when the rollback failed (and may have opened another
        # since), or it is still there but broken.
        dropped = connection.connection is not used or not connection.is_usable()
        if not (skipped and dropped) or connection.in_atomic_block:
            raise
        connection.close()
        token = _rerunning.set(True)
        try:
            answer = run()
        finally:
            _rerunning.reset(token)
    if connection.connection is not None and not connection.errors_occurred:
        connection.live_request_done_at = time.monotonic()
    return answer


def _skip_health_check() -> bool:
    if (connection.connection is None or not connection.health_check_enabled
            or connection.health_check_done):
        return False
    done_at = getattr(connection, "live_request_done_at", None)
    if done_at is None or time.monotonic() - done_at > RECENT_CONNECTION_SECONDS:
        return False
    connection.health_check_done = True
    return True
