"""The gateway's parts that need no server: reading --upstream, the tool table, the session a
call belongs to, and the texts and events it makes."""

from __future__ import annotations

from types import SimpleNamespace

import anyio
import mcp_types as types
import pytest

from studio.client import StudioClient
from studio.integrations.mcp_gateway import (
    SESSION_META_KEY, Gateway, GatewayError, _Session, parse_upstream, refusal_text, result_event,
    rule_sentences, tool_table, upstreams_of)


@pytest.mark.parametrize("spec, message", [
    ("bank", "write NAME=COMMAND or NAME=URL"),
    ("bank=", "write NAME=COMMAND or NAME=URL"),
    ("=python x.py", "the name '' must be"),
    ("ba nk=python x.py", "the name 'ba nk' must be"),
    ("bank=python 'x.py", "cannot be read (No closing quotation)"),
])
def test_an_upstream_that_does_not_fit_is_refused_saying_why(spec, message):
    with pytest.raises(GatewayError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_upstream(spec)


def test_upstreams_are_commands_or_urls_and_names_are_unique():
    bank, docs = upstreams_of(["bank=python 'my bank.py' --fast", "docs=https://x.test/mcp"])
    assert bank.transport().command == "python"
    assert bank.transport().args == ["my bank.py", "--fast"]
    assert docs.is_url and docs.transport() == "https://x.test/mcp"
    with pytest.raises(GatewayError, match="the name 'a' is given twice"):
        upstreams_of(["a=x", "a=y"])
    with pytest.raises(GatewayError, match="at least one --upstream"):
        upstreams_of([])


def tool(name: str) -> types.Tool:
    return types.Tool(name=name, input_schema={"type": "object"})


def test_a_tool_name_two_upstreams_offer_is_refused_naming_both():
    table = tool_table([("a", [tool("x"), tool("y")]), ("b", [tool("z")])])
    assert {name: up for name, (up, _) in table.items()} == {"x": "a", "y": "a", "z": "b"}
    with pytest.raises(GatewayError, match="'y' is offered by both 'a' and 'b'"):
        tool_table([("a", [tool("x"), tool("y")]), ("b", [tool("y")])])


def gateway(session: str | None = None) -> Gateway:
    return Gateway(StudioClient("http://127.0.0.1:9", "w", token="t"), [], session=session)


def call(meta: dict | None = None) -> types.CallToolRequestParams:
    return types.CallToolRequestParams(name="x", arguments={}, _meta=meta)


def request(headers: dict) -> SimpleNamespace:
    return SimpleNamespace(request=SimpleNamespace(headers=headers))


def test_the_session_is_meta_then_header_then_mcp_session_then_the_gateways_own():
    both = {"studio-session": "from-header", "mcp-session-id": "abc123"}
    assert gateway("own").session_of(request(both), call({SESSION_META_KEY: "from-meta"})) \
        == "from-meta"
    assert gateway("own").session_of(request(both), call()) == "from-header"
    assert gateway("own").session_of(request({"mcp-session-id": "abc123"}), call()) == "abc123"
    assert gateway("own").session_of(SimpleNamespace(request=None), call()) == "own"
    # Nothing names it (a 2026-07-28 HTTP request, no --session): no guess.
    assert gateway().session_of(request({}), call({SESSION_META_KEY: "  "})) is None


ANSWER = {"decision": "inject", "status": "decided",
          "reason": "this step would violate pay_first: retry with the rules added to the prompt",
          "inject": "Before your next step, keep these rules:\n- pay_first: pay before shipping",
          "rules_at_risk": [{"rule": "pay_first", "risk": 1.0, "intervention": "inject",
                             "requires": "pay before shipping"}]}


def test_a_refusal_says_which_rule_in_its_own_words_and_why():
    text = refusal_text("ship", ANSWER, {"pay_first": "Ship only what was paid for."}, "s-1")
    assert text.splitlines() == [
        "The compliance guard did not let the call to ship through: this step would violate "
        "pay_first: retry with the rules added to the prompt.",
        '- Rule pay_first ("Ship only what was paid for."), risk 100%; it still requires: pay '
        "before shipping.",
        "Before your next step, keep these rules:", "- pay_first: pay before shipping",
        "Do not repeat this call as it is: choose another step."]
    stop = refusal_text("ship", {**ANSWER, "decision": "stop", "inject": None}, {}, "s-1")
    assert stop.endswith("The guard stopped session s-1: every later tool call in it is "
                         "refused.")
    assert "Rule pay_first, risk 100%" in stop  # no sentence known: the name alone
    denied = refusal_text("ship", {**ANSWER, "decision": "stop", "status": "denied",
                                   "decided_by": "ann", "note": "not today"}, {}, "s-1")
    assert "A person (ann) denied this call on the Live page: not today" in denied


def test_a_rules_sentence_is_its_description_else_its_approved_english():
    rules = [{"name": "a", "description": "Pay first.", "approved_version": 1,
              "latest_version": {"number": 1, "english": "formal a"}},
             {"name": "b", "description": "", "approved_version": 2,
              "latest_version": {"number": 2, "english": "Always b."}},
             {"name": "c", "description": "", "approved_version": 1,
              "latest_version": {"number": 2, "english": "a draft's words"}}]
    assert rule_sentences(rules) == {"a": "Pay first.", "b": "Always b."}


def test_a_results_event_keeps_structured_content_json_text_or_blocks():
    structured = types.CallToolResult(content=[types.TextContent(text="{}")],
                                      structured_content={"balance": 5})
    assert result_event("t", "up", "c1", structured) == {
        "event_id": "c1-result", "input": {"balance": 5},
        "data": {"tool_result": "t", "tool_call_id": "c1", "upstream": "up", "is_error": False}}
    text = types.CallToolResult(content=[types.TextContent(text='{"a": 1}')], is_error=True)
    assert result_event("t", "up", "c1", text)["input"] == {"a": 1}
    assert result_event("t", "up", "c1", text)["data"]["is_error"] is True
    plain = types.CallToolResult(content=[types.TextContent(text="x" * 70_000)])
    cut = result_event("t", "up", "c1", plain)
    assert len(cut["input"]) == 64_000 and "70000 characters" in cut["data"]["truncated"]
    image = types.CallToolResult(content=[types.ImageContent(data="AAAA", mime_type="image/png")])
    assert result_event("t", "up", "c1", image)["input"] == [
        {"type": "image", "data": "AAAA", "mimeType": "image/png"}]
    failed = result_event("t", "up", "c1", None, "MCP error -32602: bad")
    assert (failed["input"], failed["data"]["is_error"]) == ("MCP error -32602: bad", True)


class RecordingStudio:
    """A studio client that answers every question ``allow``, noting the ``taken`` events it
    was sent; it confirms them stored only from the ``confirm_from``-th question on (the
    answers before stand for a studio whose store after answering failed)."""

    def __init__(self, confirm_from: int = 0):
        self.questions: list[list[str]] = []
        self.stores: list[bool] = []     # per question: whether it asked to store ``taken``
        self.posted: list[list[str]] = []
        self.confirm_from = confirm_from

    async def guard_async(self, session, event, *, decision_id, attempt, taken, store_taken):
        ids = [e["event_id"] for e in taken]
        self.questions.append(ids)
        self.stores.append(store_taken)
        stored = ids if len(self.questions) > self.confirm_from else []
        return {"decision": "allow", "status": "decided", "stored": stored}

    def send_events(self, session, events):
        self.posted.append([e["event_id"] for e in events])
        return {"rejected": 0}


class Upstream:
    async def call_tool(self, name, arguments):
        return types.CallToolResult(content=[types.TextContent(text="ok")])


def test_pending_events_ride_on_the_next_question_until_the_studio_confirms_them():
    studio = RecordingStudio(confirm_from=2)
    gw = Gateway(studio, [], session="s")
    gw.connections["up"] = Upstream()

    async def calls():
        state = gw.sessions.setdefault("s", _Session())
        for _ in range(4):
            await gw._guarded_call("s", state, "x", "up", {})
        return state

    state = anyio.run(calls)
    first, second, third, fourth = studio.questions
    assert first == []
    assert len(second) == 2 and second[1] == f"{second[0]}-result"
    # Not confirmed (the store after the second answer failed): carried again, in order.
    assert third[:2] == second and len(third) == 4
    # Confirmed by the third answer: only the third call's events ride on the fourth.
    assert len(fourth) == 2 and not set(fourth) & set(third)
    # The fourth call's own events wait for the next question (or the idle flush).
    assert len(state.pending) == 2 and state.pending[0]["event_id"] not in fourth
    assert studio.posted == []


def test_pending_events_are_asked_to_be_stored_in_batches():
    # Never confirmed, so every question carries them all; a store is asked for once four
    # events wait that no question asked to store, or once the oldest waited long enough.
    studio = RecordingStudio(confirm_from=100)
    gw = Gateway(studio, [], session="s", store_batch=4, store_delay=3600)
    gw.connections["up"] = Upstream()

    async def calls(count, state=None):
        state = state or gw.sessions.setdefault("s", _Session())
        for _ in range(count):
            await gw._guarded_call("s", state, "x", "up", {})
        return state

    state = anyio.run(calls, 6)
    assert [len(ids) for ids in studio.questions] == [0, 2, 4, 6, 8, 10]
    assert studio.stores == [False, False, True, False, True, False]
    gw.store_delay = 0.0    # the oldest unasked event has waited long enough at once
    anyio.run(calls, 1, state)
    assert studio.stores[-1] is True


def test_an_idle_session_and_a_stopping_gateway_post_their_events():
    studio = RecordingStudio()
    gw = Gateway(studio, [], session="s", idle_flush=0.2)
    gw.connections["up"] = Upstream()

    async def scenario():
        async with anyio.create_task_group() as tasks:
            gw._tasks = tasks
            idle = anyio.CancelScope()
            tasks.start_soon(gw._flush_idle_sessions, idle)
            state = gw.sessions.setdefault("s", _Session())
            await gw._guarded_call("s", state, "x", "up", {})
            await anyio.sleep(0.6)
            idle_posted = list(studio.posted)
            await gw._guarded_call("s", state, "x", "up", {})
            idle.cancel()
        await gw.store_pending()
        return idle_posted, state

    idle_posted, state = anyio.run(scenario)
    assert len(idle_posted) == 1 and len(idle_posted[0]) == 2
    assert len(studio.posted) == 2 and state.pending == []


@pytest.mark.parametrize("option", [["--store-every", "0"], ["--store-within", "-1"]])
def test_the_command_refuses_a_store_setting_that_does_not_fit(option):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="--store-every must be 1 or more"):
        call_command("mcp_gateway", "--workspace", "w", "--token", "t",
                     "--upstream", "a=python x.py", *option)
