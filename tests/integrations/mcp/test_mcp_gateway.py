"""The MCP gateway end to end: the official SDK's client talks to ``manage.py mcp_gateway``, which
proxies a real upstream MCP server (stdio and streamable HTTP) and asks the studio - a live test
server, over HTTP, with a token - about every tool call.  The approved live rule: no payment
before a balance check ("Check the balance before sending any money.")."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import urllib.parse

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from studio.guard.models import GuardDecision
from studio.traces.models import Event, TraceSession
from tests.integrations.conftest import PASSWORD
from tests.integrations.mcp.conftest import (
    REPO, SENTENCE, Person, free_port, gateway_argv, running, stored,
    upstream_argv, upstream_command)

pytestmark = pytest.mark.django_db(transaction=True)

PAY = {"to": "bob", "amount": 50}


def over_stdio(studio_url: str, token: str, calls, upstreams: list[str], *extra: str):
    """The SDK's client, starting the gateway as an MCP host does (a command, stdio)."""
    return Client(StdioServerParameters(
        command=sys.executable, args=gateway_argv(studio_url, upstreams, *extra), cwd=str(REPO),
        env={**os.environ, "STUDIO_TOKEN": token}))


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if hasattr(block, "text"))


def test_over_stdio_a_violating_call_is_refused_with_its_sentence_and_a_compliant_one_forwarded(
        live_server, token, set_policy, calls):
    async def scenario():
        async with Client(StdioServerParameters(
                command=sys.executable, args=upstream_command(calls).split()[1:])) as direct:
            expected = await direct.call_tool("get_balance", {"account": "me"})
            expected_pay = await direct.call_tool("send_money", PAY)
        async with over_stdio(live_server.url, token, calls, [f"bank={upstream_command(calls)}"],
                              "--session", "mcp-run-1") as client:
            listed = await client.list_tools()
            assert sorted(t.name for t in listed.tools) == ["echo", "get_balance", "send_money"]
            refused = await client.call_tool("send_money", PAY)
            balance = await client.call_tool("get_balance", {"account": "me"})
            paid = await client.call_tool("send_money", PAY)
        return expected, expected_pay, refused, balance, paid

    expected, expected_pay, refused, balance, paid = anyio.run(scenario)
    # Refused before it ran: the rule by name and by its sentence, and why.
    assert refused.is_error
    text = text_of(refused)
    assert "pay_after_balance" in text and SENTENCE in text, text
    assert "this step would violate pay_after_balance" in text, text
    # Forwarded with the upstream's result intact.
    for got, want in ((balance, expected), (paid, expected_pay)):
        assert not got.is_error
        assert got.content == want.content
        assert got.structured_content == want.structured_content
    assert calls() == ["get_balance", "send_money", "get_balance", "send_money"]  # 2 direct
    # The calls let through and their results are live events of the session, in order.
    events = stored("mcp-run-1", 4)
    assert [(e.output or {}).get("tool") if isinstance(e.output, dict) else None
            for e in events] == ["get_balance", None, "send_money", None]
    assert events[1].input == {"account": "me", "balance": 200}
    assert events[1].data["tool_result"] == "get_balance"
    assert events[3].input["reference"] == "tx-bob-50"


def test_over_http_to_an_http_upstream_the_mcp_session_is_the_studio_session(
        live_server, token, set_policy, calls):
    upstream_port, gateway_port = free_port(), free_port()
    env = {"STUDIO_TOKEN": token}
    upstream = [*upstream_argv(calls), "--http", str(upstream_port)]
    gateway = [sys.executable, *gateway_argv(
        live_server.url, [f"bank=http://127.0.0.1:{upstream_port}/mcp"],
        "--transport", "http", "--port", str(gateway_port))]

    async def scenario(mode: str, headers: dict | None = None):
        url = f"http://127.0.0.1:{gateway_port}/mcp"
        async with httpx2.AsyncClient(headers=headers or {}, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http),
                              mode=mode) as client:
                refused = await client.call_tool("send_money", PAY)
                balance = await client.call_tool("get_balance", {"account": "you"})
                paid = await client.call_tool("send_money", PAY)
        return refused, balance, paid

    with running(upstream, upstream_port, env), running(gateway, gateway_port, env):
        # The initialize handshake: the gateway names the session (Mcp-Session-Id).
        refused, balance, paid = anyio.run(scenario, "legacy")
        # The 2026-07-28 protocol has no MCP session: the client names it in a header.
        named = anyio.run(scenario, "auto", {"Studio-Session": "named-by-header"})
    for first, second, third in (refused, balance, paid), named:
        assert first.is_error and SENTENCE in text_of(first)
        assert not second.is_error and second.structured_content["balance"] == 300
        assert not third.is_error and third.structured_content["sent"] == 50
    sessions = {s.external_id for s in TraceSession.objects.all()}
    assert "named-by-header" in sessions and len(sessions) == 2
    for session in sessions:
        assert len(stored(session, 4)) == 4
    assert calls() == ["get_balance", "send_money"] * 2


def test_a_stop_ends_the_session_and_every_later_call_is_refused_saying_so(
        live_server, token, set_policy, calls):
    set_policy({"default_intervention": "stop"})

    async def scenario():
        async with over_stdio(live_server.url, token, calls, [f"bank={upstream_command(calls)}"],
                              "--session", "stopped-1") as client:
            return [await client.call_tool("echo", {"text": "hi"}),
                    await client.call_tool("send_money", PAY),
                    await client.call_tool("get_balance", {"account": "me"})]

    echoed, stopped, later = anyio.run(scenario)
    assert not echoed.is_error
    assert stopped.is_error and "stopped session stopped-1" in text_of(stopped)
    assert later.is_error and "stopped session stopped-1 earlier" in text_of(later)
    assert SENTENCE in text_of(later)
    assert calls() == ["echo"]
    # Ended in the studio too: the rule has its end verdict (the payment never ran).
    session = TraceSession.objects.get(external_id="stopped-1")
    assert session.ended_at is not None
    assert len(stored("stopped-1", 2)) == 2


def test_inject_becomes_the_error_text_for_the_model_to_read(live_server, token, set_policy,
                                                             calls):
    set_policy({"default_intervention": "inject"})

    async def scenario():
        async with over_stdio(live_server.url, token, calls, [f"bank={upstream_command(calls)}"],
                              "--session", "inject-1") as client:
            return await client.call_tool("send_money", PAY)

    refused = anyio.run(scenario)
    text = text_of(refused)
    assert refused.is_error and "Before your next step, keep these rules:" in text, text
    assert "Do not repeat this call as it is" in text
    assert calls() == []


def test_ask_human_waits_for_a_person_who_approves_on_the_live_page(live_server, token,
                                                                     set_policy, calls):
    set_policy({"default_intervention": "ask_human", "human_timeout_seconds": 60})
    answered = {}

    def reviewer():
        person = Person(live_server.url, "owner", PASSWORD)
        answered["page"] = person.answer_on_the_live_page("pay", approve=True, note="fine")

    async def scenario():
        async with over_stdio(live_server.url, token, calls, [f"bank={upstream_command(calls)}"],
                              "--session", "asked-1") as client:
            thread = threading.Thread(target=reviewer)
            thread.start()
            try:
                return await client.call_tool("send_money", PAY)
            finally:
                await anyio.to_thread.run_sync(thread.join, 40)

    paid = anyio.run(scenario)
    assert "Approved: the agent in session asked-1 may go ahead." in answered["page"]
    assert not paid.is_error, text_of(paid)
    assert paid.structured_content["reference"] == "tx-bob-50"
    decision = GuardDecision.objects.get(session="asked-1")
    assert (decision.status, decision.decided_by.username, decision.note) == (
        "approved", "owner", "fine")
    assert calls() == ["send_money"]
    assert len(stored("asked-1", 2)) == 2


def test_the_gateway_fails_closed_when_the_studio_cannot_be_reached_unless_told_otherwise(
        calls):
    nowhere = f"http://127.0.0.1:{free_port()}"

    async def scenario(*extra):
        async with over_stdio(nowhere, "cs_x_y", calls, [f"bank={upstream_command(calls)}"],
                              "--session", "s", "--studio-timeout", "2", *extra) as client:
            return await client.call_tool("get_balance", {"account": "me"})

    closed = anyio.run(scenario)
    assert closed.is_error
    assert "the studio could not be reached" in text_of(closed), text_of(closed)
    assert calls() == []
    opened = anyio.run(scenario, "--fail-open")
    assert not opened.is_error and opened.structured_content["balance"] == 200
    assert calls() == ["get_balance"]


def test_two_upstreams_offering_one_tool_name_refuse_to_start(calls):
    done = subprocess.run(
        [sys.executable, *gateway_argv("http://127.0.0.1:9", [
            f"first={upstream_command(calls)}", f"second={upstream_command(calls)}"])],
        cwd=REPO, env={**os.environ, "STUDIO_TOKEN": "cs_x_y"}, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "is offered by both 'first' and 'second'" in done.stderr, done.stderr
    assert done.stdout == ""  # stdout is the protocol's: nothing else is written there


def test_two_upstreams_with_distinct_tools_are_listed_together(live_server, token, set_policy,
                                                               calls):
    async def scenario():
        async with over_stdio(live_server.url, token, calls, [
                f"bank={upstream_command(calls)}", f"other={upstream_command(calls, 'b_')}"],
                "--session", "two-1") as client:
            listed = await client.list_tools()
            echoed = await client.call_tool("b_echo", {"text": "hello"})
        return listed, echoed

    listed, echoed = anyio.run(scenario)
    assert len(listed.tools) == 6
    assert not echoed.is_error and text_of(echoed) == "hello"
    assert stored("two-1", 2)[1].data["upstream"] == "other"


def test_ask_human_denied_on_the_live_page_is_a_stop_that_names_the_person(
        live_server, token, set_policy, calls):
    set_policy({"default_intervention": "ask_human", "human_timeout_seconds": 60})

    def reviewer():
        Person(live_server.url, "owner", PASSWORD).answer_on_the_live_page(
            "pay", approve=False, note="not to bob")

    async def scenario():
        async with over_stdio(live_server.url, token, calls, [f"bank={upstream_command(calls)}"],
                              "--session", "denied-1") as client:
            thread = threading.Thread(target=reviewer)
            thread.start()
            try:
                denied = await client.call_tool("send_money", PAY)
            finally:
                await anyio.to_thread.run_sync(thread.join, 40)
            return denied, await client.call_tool("get_balance", {"account": "me"})

    denied, later = anyio.run(scenario)
    assert denied.is_error
    assert "A person (owner) denied this call on the Live page: not to bob" in text_of(denied)
    assert later.is_error and "stopped session denied-1 earlier" in text_of(later)
    assert calls() == []


class Switch:
    """A TCP relay to the studio that can be switched off: while off, every connection is
    closed as it is accepted (the studio cannot be reached)."""

    def __init__(self, target_url: str):
        parsed = urllib.parse.urlsplit(target_url)
        self.target = (parsed.hostname, parsed.port)
        self.on = True
        self.listener = socket.create_server(("127.0.0.1", 0))
        # "localhost", as the live server is named (its ALLOWED_HOSTS).
        self.url = f"http://localhost:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.on:
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self):
        self.listener.close()


def events_of(session: str) -> list[tuple[str, int]]:
    """The session's stored events: (what, step), in step order (read in a thread of its own:
    the scenario runs in an event loop)."""
    from django.db import connection

    try:
        return [(e.output["tool"] if e.output else e.data["tool_result"] + " result", e.step)
                for e in Event.objects.filter(session__external_id=session).order_by("step")]
    finally:
        connection.close()


def test_events_are_not_lost_when_the_studio_is_briefly_unreachable(live_server, token,
                                                                    set_policy, calls):
    switch = Switch(live_server.url)

    async def scenario():
        async with over_stdio(switch.url, token, calls, [f"bank={upstream_command(calls)}"],
                              "--session", "down-1", "--fail-open", "--studio-timeout",
                              "2") as client:
            balance = await client.call_tool("get_balance", {"account": "me"})
            switch.on = False
            echoed = await client.call_tool("echo", {"text": "while away"})   # unguarded
            switch.on = True
            # The balance check is not stored yet: it rides on this question, which is
            # decided as if it were - the payment is allowed.
            paid = await client.call_tool("send_money", PAY)
            return balance, echoed, paid

    try:
        balance, echoed, paid = anyio.run(scenario)
    finally:
        switch.close()
    assert not balance.is_error and not echoed.is_error
    assert not paid.is_error, text_of(paid)
    assert calls() == ["get_balance", "echo", "send_money"]
    stored("down-1", 6)
    assert [what for what, _ in events_of("down-1")] == [
        "get_balance", "get_balance result", "echo", "echo result", "send_money",
        "send_money result"]
    assert [step for _, step in events_of("down-1")] == list(range(6))


def test_an_idle_session_has_its_events_stored_without_another_call(live_server, token,
                                                                    set_policy, calls):
    async def scenario():
        async with over_stdio(live_server.url, token, calls,
                              [f"bank={upstream_command(calls)}"], "--session", "idle-1") as client:
            await client.call_tool("get_balance", {"account": "me"})
            # No further call: the gateway posts the session's events once it is idle (1 s).
            deadline = anyio.current_time() + 10
            while anyio.current_time() < deadline:
                found = await anyio.to_thread.run_sync(events_of, "idle-1")
                if len(found) == 2:
                    return found
                await anyio.sleep(0.1)
            return found

    found = anyio.run(scenario)
    assert [what for what, _ in found] == ["get_balance", "get_balance result"]
