"""StudioClient.guard_async over real HTTP: the same request, answer, refusals and retries as
``guard``, made on the event loop; answers sent in chunks or without a length; proxies honoured
(left to urllib, as ``guard``)."""

import asyncio
import json

import pytest

from studio.client import StudioClient, StudioError
from tests.client.fake import answer

EVENT = {"output": {"tool": "send_money", "args": {"amount": 5}}}


def run(coroutine):
    return asyncio.run(coroutine)


def test_the_same_request_as_guard_and_its_answer(fake, client):
    fake.route("POST", "/guard", [(200, answer("allow"))])
    taken = [{"event_id": "e1", "output": {"tool": "look"}}]
    client.guard("s 1", EVENT, decision_id="d-1", attempt=1, taken=taken)
    got = run(client.guard_async("s 1", EVENT, decision_id="d-1", attempt=1, taken=taken))
    assert got["decision"] == "allow"
    sync, asynchronous = fake.of("/guard")
    assert asynchronous.path == sync.path == "/api/w/acme/live/sessions/s%201/guard"
    assert asynchronous.body == sync.body == {"event": EVENT, "decision_id": "d-1",
                                              "attempt": 1, "taken": taken}
    for name in ("authorization", "content-type", "accept", "user-agent"):
        assert asynchronous.headers[name] == sync.headers[name]


def test_store_taken_false_is_sent_only_with_taken(fake, client):
    fake.route("POST", "/guard", [(200, answer("allow"))])
    run(client.guard_async("s1", EVENT, taken=[{"event_id": "e1"}], store_taken=False))
    run(client.guard_async("s1", EVENT, store_taken=False))
    first, second = fake.of("/guard")
    assert first.body["store_taken"] is False
    assert "store_taken" not in second.body and "taken" not in second.body


def test_a_refusal_is_a_studio_error_naming_the_field(fake, client):
    fake.route("POST", "/guard", [(422, {"detail": "taken[0].event_id is required",
                                         "field": "taken[0].event_id"})])
    with pytest.raises(StudioError) as refused:
        run(client.guard_async("s1", EVENT, taken=[{"event_id": "e1"}]))
    assert refused.value.status == 422 and refused.value.field == "taken[0].event_id"


def test_a_503_is_retried_after_its_retry_after(fake, client):
    fake.route("POST", "/guard", [(503, {"detail": "busy"}, {"Retry-After": "0"}),
                                  (200, answer("stop"))])
    assert run(client.guard_async("s1", EVENT, decision_id="d"))["decision"] == "stop"
    first, second = fake.of("/guard")
    assert first.body == second.body   # the same question (the same decision id)


def test_no_studio_is_a_studio_error_without_a_status():
    client = StudioClient("http://127.0.0.1:9", "acme", token="t", timeout=2)
    with pytest.raises(StudioError) as failed:
        run(client.guard_async("s1", EVENT))
    assert failed.value.status is None and "got no answer" in str(failed.value)


@pytest.mark.parametrize("framing", ["chunked", "until-closed"])
def test_answers_in_chunks_or_until_the_connection_closes_are_read(framing):
    body = json.dumps(answer("allow", reason="x" * 5000)).encode()

    async def scenario():
        async def reply(reader, writer):
            await reader.readuntil(b"\r\n\r\n")
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            if framing == "chunked":
                chunks = [body[i:i + 999] for i in range(0, len(body), 999)]
                payload = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(c), c) for c in chunks)
                writer.write(head + b"Transfer-Encoding: chunked\r\n\r\n" + payload
                             + b"0\r\nX-Trailer: 1\r\n\r\n")
            else:
                writer.write(head + b"\r\n" + body)
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(reply, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            client = StudioClient(f"http://127.0.0.1:{port}", "acme", token="t", timeout=5)
            return await client.guard_async("s1", EVENT)

    assert run(scenario())["reason"] == "x" * 5000


def test_a_proxy_in_the_environment_is_left_to_urllib(monkeypatch):
    monkeypatch.setenv("http_proxy", "http://proxy.invalid:3128")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    client = StudioClient("http://studio.invalid", "acme", token="t", timeout=5)
    sent = []

    def through_urllib(method, url, raw, msg_id, timeout):
        sent.append((method, url, json.loads(raw)))
        return 200, {}, answer("allow")

    monkeypatch.setattr(client, "_send", through_urllib)
    assert run(client.guard_async("s1", EVENT))["decision"] == "allow"
    assert sent[0][:2] == ("POST", "http://studio.invalid/api/w/acme/live/sessions/s1/guard")
