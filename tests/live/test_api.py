"""The live routes over HTTP: tokens and Standard Webhooks signatures, size limits also after
decompression, partial success, rate limits, an unavailable database, OTLP at /v1/traces."""

import gzip
import json
import time
import tracemalloc
import zlib
from unittest import mock

import pytest
from django.db import OperationalError, close_old_connections, connection, connections
from django.test import Client, override_settings

from studio.live import api, intake
from studio.traces.models import Event, TraceSession
from studio.workspaces import services as workspace_services
from studio.workspaces.models import WebhookSecret
from tests.live.conftest import Agent

pytestmark = pytest.mark.django_db

SHIP = {"event_id": "e1", "output": {"tool": "ship", "args": {}}}


def stored():
    return Event.objects.count()


# ---------------------------------------------------------------------------------------------
# Tokens

def test_a_token_posts_and_reads_back_changes_and_residuals(workspace, token):
    response = Agent("acme", token=token).post("s1", [SHIP])
    assert response.status_code == 200
    body = response.json()
    assert body["events"][0]["changes"][0] == {"rule": "pay_before_ship", "step": 0,
                                               "verdict": "violated", "verdict_was": "violated"}
    assert {r["rule"]: r["residual"] for r in body["rules"]}["no_delete"] == "G !tool_call:delete"


def test_missing_bad_revoked_and_foreign_tokens(workspace, token, owner):
    assert Agent("acme").client.post(Agent("acme").url("s1"), data=b'{"events": []}',
                                     content_type="application/json").status_code == 401
    assert Agent("acme", token=token + "x").post("s1", [SHIP]).status_code == 401
    assert Agent("acme", token="not-a-token").post("s1", [SHIP]).status_code == 401
    other = workspace_services.create_workspace("Other", owner=owner, slug="other")
    _, foreign = workspace_services.create_token(other, "theirs", ["auditor"], by=owner)
    assert Agent("acme", token=foreign).post("s1", [SHIP]).status_code == 404
    token_row = workspace.tokens.get()
    workspace_services.revoke_token(token_row, by=owner)
    assert Agent("acme", token=token).post("s1", [SHIP]).status_code == 401
    assert stored() == 0


# ---------------------------------------------------------------------------------------------
# Signatures

def test_a_signed_delivery_is_accepted(workspace, secret):
    response = Agent("acme", secret=secret).post("s1", [SHIP])
    assert response.status_code == 200, response.content
    assert stored() == 1


def test_any_one_byte_change_to_the_body_is_refused(workspace, secret):
    agent = Agent("acme", secret=secret)
    body = json.dumps({"events": [SHIP]}).encode()
    stamp, msg_id = int(time.time()), "msg_1"
    from studio.live.intake import sign

    signature = sign(secret, msg_id, stamp, body)
    headers = {"webhook-id": msg_id, "webhook-timestamp": str(stamp),
               "webhook-signature": signature}
    for position in range(len(body)):
        changed = bytearray(body)
        changed[position] ^= 0x01
        response = agent.post("s1", [], body=bytes(changed), headers=headers, signed=True)
        assert response.status_code == 401, position
    assert agent.post("s1", [], body=body + b" ", headers=headers, signed=True
                      ).status_code == 401
    assert stored() == 0
    assert agent.post("s1", [], body=body, headers=headers, signed=True).status_code == 200


@pytest.mark.parametrize("headers", [
    {"webhook-signature": "v1,AAAA"},
    {"webhook-signature": "v1,not base64!"},
    {"webhook-signature": "v2,whatever"},
    {"webhook-signature": ""},
    {"webhook-id": ""},
    {"webhook-timestamp": "12.5"},
    {"webhook-timestamp": "soon"},
])
def test_bad_signatures_and_headers_are_refused(workspace, secret, headers):
    response = Agent("acme", secret=secret).post("s1", [SHIP], headers=headers)
    assert response.status_code == 401
    assert stored() == 0


# 10 s either side of the 300 s tolerance: the stamp is whole seconds and the request takes time,
# so 1 s off (301) could arrive within the tolerance on a slow machine.
@pytest.mark.parametrize("offset, status", [(-310, 401), (310, 401), (-290, 200), (290, 200)])
def test_timestamps_are_checked_both_ways(workspace, secret, offset, status):
    response = Agent("acme", secret=secret).post("s1", [SHIP], stamp=int(time.time()) + offset)
    assert response.status_code == status


def test_rotation_accepts_either_secret_and_several_signatures(workspace, secret, owner):
    newer = workspace_services.create_webhook_secret(workspace, "payments agent",
                                                     by=owner).secret
    assert Agent("acme", secret=secret).post("s1", [{"event_id": "1"}]).status_code == 200
    assert Agent("acme", secret=newer).post("s1", [{"event_id": "2"}]).status_code == 200
    # A sender in the middle of a rotation signs with both; one valid signature is enough.
    body = json.dumps({"events": [{"event_id": "3"}]}).encode()
    from studio.live.intake import sign

    stamp = int(time.time())
    both = " ".join(["v1,Zm9vYmFy", sign(newer, "m3", stamp, body), "v1a,ignored"])
    agent = Agent("acme", secret=secret)
    assert agent.post("s1", [], body=body, signed=True, headers={
        "webhook-id": "m3", "webhook-timestamp": str(stamp), "webhook-signature": both}
    ).status_code == 200
    WebhookSecret.objects.filter(secret=secret).update(revoked_at="2025-01-01T00:00:00Z")
    assert Agent("acme", secret=secret).post("s1", [{"event_id": "4"}]).status_code == 401
    assert stored() == 3


def test_signatures_of_another_workspace_or_an_unknown_one_are_refused(workspace, owner):
    other = workspace_services.create_workspace("Other", owner=owner, slug="other")
    theirs = workspace_services.create_webhook_secret(other, "their agent", by=owner).secret
    assert Agent("acme", secret=theirs).post("s1", [SHIP]).status_code == 401
    assert Agent("nope", secret=theirs).post("s1", [SHIP]).status_code == 401


def test_a_redelivered_webhook_without_event_ids_is_a_duplicate(workspace, secret):
    agent = Agent("acme", secret=secret)
    first = agent.post("s1", [{"output": "hi"}, {"output": "there"}], msg_id="msg_7")
    again = agent.post("s1", [{"output": "hi"}, {"output": "there"}], msg_id="msg_7")
    assert first.status_code == again.status_code == 200
    assert [e["status"] for e in again.json()["events"]] == ["duplicate", "duplicate"]
    assert [e["event_id"] for e in again.json()["events"]] == ["msg_7:0", "msg_7:1"]
    assert stored() == 2


# ---------------------------------------------------------------------------------------------
# Sizes and encodings

def test_compressed_bodies_are_read(workspace, token):
    agent = Agent("acme", token=token)
    body = json.dumps({"events": [SHIP]}).encode()
    assert agent.post("s1", [], body=gzip.compress(body),
                      headers={"Content-Encoding": "gzip"}).status_code == 200
    assert agent.post("s2", [], body=zlib.compress(body.replace(b'"e1"', b'"e2"')),
                      headers={"Content-Encoding": "deflate"}).status_code == 200
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    raw = raw_deflate.compress(body.replace(b'"e1"', b'"e3"')) + raw_deflate.flush()
    assert agent.post("s2", [], body=raw, headers={"Content-Encoding": "deflate"}
                      ).json()["stored"] == 1
    response = agent.post("s3", [], body=b"abc", headers={"Content-Encoding": "br"})
    assert response.status_code == 415
    assert agent.post("s3", [], body=b"abc", headers={"Content-Encoding": "gzip"}
                      ).status_code == 400
    assert agent.post("s3", [], body=gzip.compress(body)[:-10],
                      headers={"Content-Encoding": "gzip"}).status_code == 400


def test_a_signed_compressed_body_is_verified_as_received(workspace, secret):
    body = gzip.compress(json.dumps({"events": [SHIP]}).encode())
    response = Agent("acme", secret=secret).post("s1", [], body=body,
                                                 headers={"Content-Encoding": "gzip"})
    assert response.status_code == 200


@override_settings(MAX_REQUEST_BYTES=1 << 20)
def test_a_body_over_the_limit_is_413(workspace, token):
    agent = Agent("acme", token=token)
    big = json.dumps({"events": [{"input": "x" * (1 << 20)}]}).encode()
    assert agent.post("s1", [], body=big).status_code == 413
    assert stored() == 0


@override_settings(MAX_REQUEST_BYTES=1 << 20)
def test_a_gzip_bomb_is_refused_with_bounded_memory(workspace, token):
    # 256 MiB of zeros in about 250 KB: inflated whole, it would take 256 MiB.
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    bomb = b"".join([compressor.compress(zeros) for _ in range(256)]) + compressor.flush()
    assert len(bomb) < 1 << 20
    agent = Agent("acme", token=token)
    tracemalloc.start()
    try:
        response = agent.post("s1", [], body=bomb, headers={"Content-Encoding": "gzip"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 413
    assert peak < 8 * (1 << 20), f"peak {peak / 2**20:.1f} MiB"
    assert stored() == 0


# ---------------------------------------------------------------------------------------------
# Partial success and bad bodies

def test_partial_success_is_207_naming_the_bad_items(workspace, token):
    response = Agent("acme", token=token).post("s1", [SHIP, {"labels": [1]}, {"event_id": "e2"}])
    assert response.status_code == 207
    body = response.json()
    assert [e["status"] for e in body["events"]] == ["stored", "error", "stored"]
    assert body["events"][1]["index"] == 1 and body["events"][1]["field"] == "labels"
    assert stored() == 2


def test_nothing_storable_is_422_and_bad_json_is_400(workspace, token):
    agent = Agent("acme", token=token)
    assert agent.post("s1", [{"labels": "x"}, 3]).status_code == 422
    assert agent.post("s1", [], body=b"{nope").status_code == 400
    assert agent.post("s1", [], body=b'{"events": [{"data": {"x": NaN}}]}').status_code == 400
    assert agent.post("s1", [], body=b'{"events": {}}').status_code == 422
    assert agent.post("s1", [], body=b'[1]').status_code == 422
    assert agent.post("s1", [], body=b"[" * 100_000 + b"]" * 100_000).status_code == 400
    assert agent.post("s1", [], body=b'{"events": [{"input": "\\ud800"}]}').status_code == 422
    assert agent.post("s1", []).status_code == 200
    assert stored() == 0


# ---------------------------------------------------------------------------------------------
# Rate limits and an unavailable database

@override_settings(LIVE_RATE_LIMIT_PER_MINUTE=3)
def test_past_the_rate_limit_429_with_retry_after(workspace, token, secret):
    from django.core.cache import cache

    cache.clear()
    now = time.time()
    middle = now - now % 60 + 30  # one window for the whole test, close enough to sign with
    agent = Agent("acme", token=token)
    with mock.patch("studio.live.intake.time.time", return_value=middle):
        codes = [agent.post("s1", [{"event_id": str(i)}]).status_code for i in range(4)]
        assert codes == [200, 200, 200, 429]
        response = agent.post("s1", [{"event_id": "9"}])
        assert response.status_code == 429 and response["Retry-After"] == "31"
        # Signed deliveries are counted per workspace, apart from the token's.
        assert Agent("acme", secret=secret).post("s1", [{"event_id": "s"}]).status_code == 200
    assert stored() == 4
    cache.clear()


def test_an_unavailable_database_is_503_with_retry_after(workspace, token):
    agent = Agent("acme", token=token)
    with mock.patch.object(api, "ingest", side_effect=OperationalError("gone")):
        response = agent.post("s1", [SHIP])
    assert response.status_code == 503 and response["Retry-After"] == "5"
    with mock.patch("studio.live.intake.find_token", side_effect=OperationalError("gone")):
        response = agent.post("s1", [SHIP])
    assert response.status_code == 503
    assert stored() == 0
    assert agent.post("s1", [SHIP]).status_code == 200  # the retry stores it


@override_settings(CACHES={"default": {
    "BACKEND": "django.core.cache.backends.redis.RedisCache",
    "LOCATION": "redis://127.0.0.1:1/0",  # nobody listens there
    "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.25}}})
def test_a_rate_limit_cache_that_does_not_answer_lets_deliveries_through(workspace, token):
    started = time.monotonic()
    response = Agent("acme", token=token).post("s1", [{"event_id": "a"}])

    assert response.status_code == 200, response.content
    assert time.monotonic() - started < 5
    assert stored() == 1


@pytest.mark.django_db(transaction=True)
def test_a_connection_dropped_between_live_requests_is_replaced_without_an_error(
        workspace, token, monkeypatch, settings):
    """A connection that served a live request a moment ago serves the next without Django's
    health check (a round trip less); when Postgres dropped it meanwhile, the request runs again
    on a new connection: 200 and the event stored, not a 503, and counted once by the rate
    limit.  Idle longer, it is checked."""
    if connection.vendor != "postgresql":
        pytest.skip("needs Postgres (a server process to terminate)")
    import psycopg
    from django.core.cache import cache

    cache.clear()
    settings.LIVE_RATE_LIMIT_PER_MINUTE = 4  # a, b, c (run twice) and d: the fifth is refused
    now = time.time()
    monkeypatch.setattr(intake.time, "time", lambda: now - now % 60 + 30)  # one window

    wrapper = connections["default"]
    database = wrapper.settings_dict
    checks = []
    original = type(wrapper).is_usable

    def counted(self):
        checks.append(1)
        return original(self)

    monkeypatch.setattr(type(wrapper), "is_usable", counted)
    agent = Agent("acme", token=token)

    def post(event_id: str):
        # Between requests a server resets the connection's check (the test client does not).
        close_old_connections()
        return agent.post("s1", [{"event_id": event_id}])

    assert post("a").status_code == 200
    checks.clear()
    assert post("b").status_code == 200
    assert checks == []  # used again at once: not checked

    pid = wrapper.connection.info.backend_pid
    with psycopg.connect(dbname=database["NAME"], user=database["USER"],
                         host=database["HOST"] or None, port=database["PORT"] or None,
                         password=database["PASSWORD"] or None, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
        for _ in range(100):  # the server process exits a moment later
            if not other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s",
                                 [pid]).fetchall():
                break
            time.sleep(0.05)
    response = post("c")
    assert response.status_code == 200, response.content
    assert wrapper.connection.info.backend_pid != pid
    assert sorted(Event.objects.values_list("event_id", flat=True)) == ["a", "b", "c"]

    monkeypatch.setattr(intake, "RECENT_CONNECTION_SECONDS", 0.0)
    checks.clear()
    assert post("d").status_code == 200  # the fourth request: c was counted once
    assert checks == [1]  # Django's own check, as for any other request
    assert post("e").status_code == 429


# ---------------------------------------------------------------------------------------------
# Check

def test_the_check_route_stores_nothing(workspace, token):
    agent = Agent("acme", token=token)
    agent.post("s1", [{"event_id": "p", "output": {"tool": "pay", "args": {}}}])
    state = TraceSession.objects.get().monitor_state
    response = agent.post("s1", [{"output": {"tool": "delete"}}, {"output": "fine"}], "check")
    assert response.status_code == 200
    first, second = response.json()["candidates"]
    assert first["violates"] is True and second["violates"] is False
    assert stored() == 1 and TraceSession.objects.get().monitor_state == state


# ---------------------------------------------------------------------------------------------
# OTLP at /v1/traces

def otlp_doc(*span_ids, session="conv-1", tool="ship"):
    return {"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
        "scopeSpans": [{"spans": [{
            "traceId": "5b8efff798038103d269b633813fc60c", "spanId": span_id,
            "name": "execute_tool", "kind": 1, "startTimeUnixNano": str(1_700_000_000 + i),
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                {"key": "gen_ai.tool.name", "value": {"stringValue": tool}},
                {"key": "gen_ai.conversation.id", "value": {"stringValue": session}}]}
            for i, span_id in enumerate(span_ids)]}]}]}


def post_otlp(token, document, *, body=None, content_type="application/json", headers=None):
    extra = {"Authorization": f"Bearer {token}"} if token else {}
    extra.update(headers or {})
    return Client().post("/v1/traces", data=body if body is not None else json.dumps(document),
                         content_type=content_type, headers=extra)


def test_otlp_spans_are_monitored_as_events(workspace, token):
    response = post_otlp(token, otlp_doc("aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"))
    assert response.status_code == 200 and response.json() == {}
    events = list(Event.objects.order_by("step"))
    assert [e.event_id for e in events] == ["aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"]
    assert events[0].source == "otlp" and events[0].lifeline == "agent"
    assert events[0].session.external_id == "conv-1"
    state = events[0].session.monitor_state
    assert state["steps"] == 2
    # Exporters retry: the same spans again store nothing.
    assert post_otlp(token, otlp_doc("aaaaaaaaaaaaaaaa")).json() == {}
    assert stored() == 2


def test_otlp_partial_success_counts_rejected_spans(workspace, token):
    document = otlp_doc("aaaaaaaaaaaaaaaa", "not-hex", "cccccccccccccccc")
    response = post_otlp(token, document, body=gzip.compress(json.dumps(document).encode()),
                         headers={"Content-Encoding": "gzip"})
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1" and "span 1" in partial["errorMessage"]
    assert "spanId" in partial["errorMessage"]
    assert stored() == 2


def test_otlp_refusals(workspace, token):
    assert post_otlp(None, otlp_doc("aaaaaaaaaaaaaaaa")).status_code == 401
    refused = post_otlp(token, None, body=b"<spans/>", content_type="application/xml")
    assert refused.status_code == 415 and refused.json()["code"] == 3
    assert post_otlp(token, None, body=b"[").status_code == 400
    assert Client().get("/v1/traces").status_code == 405
    assert stored() == 0


# ---------------------------------------------------------------------------------------------
# The routes in the API's description; no CSRF token needed (RELIABILITY 13)

def test_machine_routes_need_no_csrf_token(workspace, token, secret):
    strict = Client(enforce_csrf_checks=True)
    body = json.dumps({"events": [SHIP]})
    response = strict.post("/api/w/acme/live/sessions/s1/events", data=body,
                           content_type="application/json",
                           headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    response = strict.post("/v1/traces", data=json.dumps(otlp_doc("aaaaaaaaaaaaaaaa")),
                           content_type="application/json",
                           headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200


def test_the_live_routes_are_described_in_openapi(workspace):
    schema = Client().get("/api/openapi.json").json()
    events = schema["paths"]["/api/w/{slug}/live/sessions/{session_id}/events"]["post"]
    assert set(events["responses"]) >= {"200", "207", "401", "413", "429", "503"}
    assert "events" in events["requestBody"]["content"]["application/json"]["schema"][
        "properties"]
    assert "/api/w/{slug}/live/sessions/{session_id}/check" in schema["paths"]


def test_an_llm_labeler_that_cannot_answer_gives_503_and_stores_nothing(workspace, token,
                                                                        monkeypatch):
    from studio.rules.models import Labeler

    for name in ("LLM_BASE_URL", "LLM_MODEL", "LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)  # no endpoint: the labeler cannot be asked
    Labeler.objects.create(workspace=workspace, atom="rude", kind="llm",
                           config={"description": "the agent is rude to the user"})
    agent = Agent("acme", token=token)
    for what in ("events", "check"):
        response = agent.post("s1", [{"event_id": "e1", "output": "hello"}], what)
        assert response.status_code == 503, response.content
        assert response["Retry-After"] == "30"
        assert "nothing was stored" in response.json()["detail"]
    assert not Event.objects.exists() and not TraceSession.objects.filter(steps__gt=0).exists()
