"""StudioClient over real HTTP against the fake studio: request shapes, auth, retries on 429 and
503 honouring Retry-After, and refusals raised as StudioError with status, detail and field."""

import base64
import email.utils
import hashlib
import hmac
import json
import socket
import time

import pytest

from studio.client import StudioClient, StudioError, retry_after_seconds
from tests.client.fake import answer

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()


def test_events_check_and_end_go_to_the_session_routes_with_the_token(fake, client):
    fake.route("POST", "/check", [(200, {"session": "s 1", "steps": 0, "candidates": []})])
    fake.route("POST", "/end", [(200, {"session": "s 1", "rules": []})])
    stored = client.send_events("s 1/x", [{"output": {"tool": "pay", "args": {}}}])
    assert stored["stored"] == 1
    assert client.check("s 1/x", [{"output": "hi"}])["candidates"] == []
    assert client.end("s 1/x") == {"session": "s 1", "rules": []}
    events, check, end = fake.requests
    # The session id is one path segment, whatever it holds.
    assert events.path == "/api/w/acme/live/sessions/s%201%2Fx/events"
    assert events.body == {"events": [{"output": {"tool": "pay", "args": {}}}]}
    assert check.body == {"candidates": [{"output": "hi"}]}
    assert end.path.endswith("/end") and end.body == {}
    for request in fake.requests:
        assert request.headers["authorization"] == "Bearer tok-1"
        assert request.headers["content-type"] == "application/json"


def test_the_guard_request_carries_the_contract_fields(fake, client):
    fake.route("POST", "/guard", [(200, answer("allow"))])
    event = {"output": {"tool": "send_money", "args": {"amount": 5}}}
    got = client.guard("s1", event, continuation=[{"output": "done"}],
                       candidates=[{"event": {"output": "x"}}], decision_id="d-1", attempt=2)
    assert got["decision"] == "allow"
    assert fake.of("/guard")[0].body == {
        "event": event, "continuation": [{"output": "done"}],
        "candidates": [{"event": {"output": "x"}}], "decision_id": "d-1", "attempt": 2}
    client.guard("s1", event)
    second = fake.of("/guard")[1].body
    assert set(second) == {"event", "decision_id", "attempt"}  # optional fields left out
    assert len(second["decision_id"]) == 32  # made up, so a retry is the same question


def test_a_signed_request_carries_a_standard_webhooks_signature(fake, slept):
    client = StudioClient(fake.url, "acme", webhook_secret=SECRET, sleep=slept.append)
    client.send_events("s1", [{"event_id": "e1"}])
    request = fake.requests[0]
    assert "authorization" not in request.headers
    msg_id, stamp = request.headers["webhook-id"], request.headers["webhook-timestamp"]
    assert abs(int(stamp) - time.time()) < 5
    expected = hmac.new(b"k" * 32, f"{msg_id}.{stamp}.".encode() + request.raw,
                        hashlib.sha256).digest()
    assert request.headers["webhook-signature"] == "v1," + base64.b64encode(expected).decode()


def test_credentials_are_required_and_a_bad_secret_fails_at_once():
    with pytest.raises(ValueError):
        StudioClient("http://x", "acme")
    with pytest.raises(ValueError):
        StudioClient("http://x", "acme", webhook_secret="whsec_not base64!")


# ---------------------------------------------------------------------------------------------
# Retries

@pytest.mark.parametrize("status", [429, 503])
def test_429_and_503_are_retried_after_their_retry_after(fake, client, slept, status):
    fake.route("POST", "/guard", [(status, {"detail": "busy"}, {"Retry-After": "2"}),
                                  (status, {"detail": "busy"}, {"Retry-After": "1"}),
                                  (200, answer("allow"))])
    assert client.guard("s1", {"output": "x"}, decision_id="same")["decision"] == "allow"
    assert slept == [2.0, 1.0]
    bodies = [r.raw for r in fake.of("/guard")]
    assert len(bodies) == 3 and len(set(bodies)) == 1  # the same question, the same id


def test_a_signed_retry_keeps_its_webhook_id_so_the_server_sees_a_redelivery(fake, slept):
    client = StudioClient(fake.url, "acme", webhook_secret=SECRET, sleep=slept.append)
    fake.route("POST", "/events", [(503, {"detail": "db down"}, {"Retry-After": "5"}),
                                   (200, {"events": [], "rejected": 0})])
    client.send_events("s1", [{"output": "x"}])
    first, second = fake.of("/events")
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert slept == [5.0]


def test_retries_are_bounded_and_the_last_refusal_is_raised(fake, slept):
    client = StudioClient(fake.url, "acme", token="t", retries=2, sleep=slept.append)
    fake.route("POST", "/events", [(429, {"detail": "more than 10 requests this minute"},
                                    {"Retry-After": "3"})])
    with pytest.raises(StudioError) as caught:
        client.send_events("s1", [{}])
    assert caught.value.status == 429
    assert caught.value.retry_after == 3.0
    assert "more than 10 requests" in caught.value.detail
    assert len(fake.of("/events")) == 3 and slept == [3.0, 3.0]


def test_a_retry_after_longer_than_the_client_waits_is_raised_at_once(fake, slept):
    client = StudioClient(fake.url, "acme", token="t", max_retry_wait=10, sleep=slept.append)
    fake.route("POST", "/events", [(429, {"detail": "slow down"}, {"Retry-After": "61"})])
    with pytest.raises(StudioError) as caught:
        client.send_events("s1", [{}])
    assert caught.value.retry_after == 61.0 and slept == []
    assert len(fake.of("/events")) == 1


def test_a_503_without_retry_after_waits_a_second(fake, client, slept):
    fake.route("POST", "/end", [(503, {"detail": "x"}), (200, {"rules": []})])
    client.end("s1")
    assert slept == [1.0]


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= retry_after_seconds(later) <= 30
    earlier = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert retry_after_seconds(earlier) == 0.0


# ---------------------------------------------------------------------------------------------
# Refusals

@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 413, 415, 422])
def test_a_problem_is_raised_with_its_status_detail_and_field_and_not_retried(
        fake, client, slept, status):
    fake.route("POST", "/guard", [(status, {"detail": "event.output is odd",
                                            "field": "event.output"})])
    with pytest.raises(StudioError) as caught:
        client.guard("s1", {"output": 1})
    error = caught.value
    assert (error.status, error.detail, error.field) == (status, "event.output is odd",
                                                         "event.output")
    assert error.body == {"detail": "event.output is odd", "field": "event.output"}
    assert str(error) == f"HTTP {status}: event.output is odd (field event.output)"
    assert slept == [] and len(fake.requests) == 1


def test_a_batch_refused_whole_names_its_first_refusal(fake, client):
    fake.route("POST", "/events", [(422, {"events": [
        {"index": 0, "status": "error", "error": "labels must be a list", "field": "labels"},
        {"index": 1, "status": "error", "error": "data must be an object", "field": "data"}],
        "stored": 0, "rejected": 2})])
    with pytest.raises(StudioError) as caught:
        client.send_events("s1", [{"labels": 1}, {"data": 2}])
    assert caught.value.status == 422
    assert caught.value.field == "labels"
    assert caught.value.detail == "event 0: labels must be a list (and 1 more refused)"


def test_a_partly_refused_batch_is_returned(fake, client):
    body = {"stored": 1, "rejected": 1, "events": [
        {"index": 0, "status": "stored", "step": 0, "changes": []},
        {"index": 1, "status": "error", "error": "bad", "field": "labels"}]}
    fake.route("POST", "/events", [(207, body)])
    assert client.send_events("s1", [{}, {"labels": 3}]) == body


def test_an_answer_that_is_not_json_is_still_a_studio_error(fake, client):
    fake.route("POST", "/events", [(502, b"<html>Bad gateway</html>")])
    with pytest.raises(StudioError) as caught:
        client.send_events("s1", [{}])
    assert caught.value.status == 502 and "Bad gateway" in caught.value.detail


def test_no_server_is_a_studio_error_without_status():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nobody listens there
    client = StudioClient(f"http://127.0.0.1:{port}", "acme", token="t", timeout=2)
    with pytest.raises(StudioError) as caught:
        client.send_events("s1", [{}])
    assert caught.value.status is None and "got no answer" in caught.value.detail


# ---------------------------------------------------------------------------------------------
# Waiting for a human

def test_wait_for_decision_long_polls_until_decided(fake, client, slept):
    fake.route("GET", "/guard/d-9", [(200, answer("ask_human", status="pending")),
                                     (200, answer("ask_human", status="pending")),
                                     (200, answer("allow", status="approved"))])
    got = client.wait_for_decision("s1", "d-9", timeout=100)
    assert got["status"] == "approved"
    polls = fake.of("/guard/d-9", method="GET")
    assert [p.query["wait"] for p in polls] == ["30", "30", "30"]  # the server's limit
    assert slept == [1, 1]  # the fake answered at once: the client paced itself


def test_wait_for_decision_returns_the_pending_answer_when_its_time_is_up(fake, client):
    fake.route("GET", "/guard/d-9", [(200, answer("ask_human", status="pending"))])
    got = client.wait_for_decision("s1", "d-9", timeout=0.5)
    assert got["status"] == "pending"
    assert [p.query["wait"] for p in fake.of("/guard/d-9", method="GET")] == ["0"]


def test_the_socket_timeout_covers_the_long_poll(fake, slept):
    def slow(request):
        time.sleep(1.5)  # longer than the client's timeout, shorter than timeout + wait
        return 200, answer("allow", status="approved")

    fake.route("GET", "/guard/d-1", slow)
    client = StudioClient(fake.url, "acme", token="t", timeout=1, sleep=slept.append)
    assert client.decision("s1", "d-1", wait=2)["status"] == "approved"


def test_signed_long_polls_sign_the_empty_body(fake, slept):
    fake.route("GET", "/guard/d-1", [(200, answer("allow", status="approved"))])
    client = StudioClient(fake.url, "acme", webhook_secret=SECRET, sleep=slept.append)
    client.decision("s1", "d-1")
    request = fake.requests[0]
    msg_id, stamp = request.headers["webhook-id"], request.headers["webhook-timestamp"]
    expected = hmac.new(b"k" * 32, f"{msg_id}.{stamp}.".encode(), hashlib.sha256).digest()
    assert request.headers["webhook-signature"] == "v1," + base64.b64encode(expected).decode()
    assert json.loads(json.dumps(request.query)) == {"wait": "0"}
