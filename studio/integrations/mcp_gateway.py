"""The MCP gateway: an MCP server that proxies upstream MCP servers and guards every tool call.

    gateway = Gateway(StudioClient(url, "acme", token=...), [parse_upstream("bank=python bank.py")])
    anyio.run(gateway.serve_stdio)          # or gateway.serve_http("127.0.0.1", 8100)

The gateway connects to each upstream (a command it starts and speaks to over stdio, or a
streamable-HTTP URL) with the official ``mcp`` SDK's client, and lists their tools under their own
names.  Two upstreams offering the same tool name is a configuration error: the gateway refuses
to start and names both (a prefix would change the names the model was told about).

Every ``tools/call`` is asked of the studio's guard over HTTP (``studio.client``, the workspace's
token) with the call as the candidate event, ``{"output": {"tool": name, "args": arguments}}``:

- allowed: the call goes upstream and its result comes back as it is; the call and its result
  are then stored as two live events of the session (``{"input": result, "data":
  {"tool_result": name, ...}}``, as examples/openai_tool_loop.py records a result; a result's
  structured content, else its text - parsed when it is a JSON object or array);
- refused (resample, best_of_n, inject, switch): the model gets an MCP tool error (``isError``)
  whose text names each rule at risk, its own sentence, the guard's reason and what the rule
  still requires - and for inject the guard's text to keep in mind;
- stop: the same error, the session is ended in the studio, and every later call of the session
  is refused saying so;
- ask_human: the call waits (up to the policy's deadline) for a person on the Live page; approved
  it goes ahead, denied or timed out with a ``stop`` default it is a stop.

The session is, first found: the ``studio/session`` key of the call's ``_meta``; the
``Studio-Session`` HTTP header; the MCP session (``Mcp-Session-Id``, streamable HTTP with the
initialize handshake); the gateway's own session (``--session``, or one made up per stdio
process: a stdio gateway serves one client).  A call with none (a 2026-07-28 HTTP request, which
has no MCP session, without the header or ``_meta``) is refused saying how to name one - never a
guess.  Calls of one session are taken one at a time, in the order they arrive, so each is judged
on the session as it stands after the previous one.

A call's events wait in the session's ``pending`` list until the studio confirms them stored.
The next call's guard question carries them (``taken``): the guard decides as if they were
stored, says which it had stored already (those leave ``pending``), and stores the others after
sending its answer - so no call waits for the previous call's events to be written, and no
second request is made for them.  A session idle for ``IDLE_FLUSH_SECONDS``, a session that
ends, a gateway that shuts down and a list longer than one question carries (``MAX_TAKEN``)
post ``pending`` through the events route (the one the model's next call then waits for);
events are idempotent by id, so one sent twice is stored once.  When the studio cannot be
reached the gateway fails closed: the call is refused with an error saying the studio could not
be reached, unless ``fail_open`` is set, in which case it goes upstream unguarded and its events
wait (in order, up to ``MAX_PENDING_EVENTS``) until the studio answers again.  A refusal by the
studio itself (a wrong token: 401, no such workspace: 404) is never waved through.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import shlex
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from studio.client import StudioClient, StudioError

from .stdio_pipes import claimed_stdio

log = logging.getLogger("studio.mcp_gateway")

SESSION_META_KEY = "studio/session"
SESSION_HEADER = "studio-session"
MCP_SESSION_HEADER = "mcp-session-id"
# A policy waits at most 24 h for a person (studio.risk.guard.MAX_HUMAN_WAIT_SECONDS): the
# studio's own deadline always comes first.
HUMAN_WAIT_SECONDS = 24 * 3600 + 300
MAX_PENDING_EVENTS = 10_000
MAX_TAKEN = 64                      # events one guard question carries (the studio's cap)
IDLE_FLUSH_SECONDS = 1.0            # a session this long without a call posts its events
IDLE_CHECK_SECONDS = 0.25
STORE_BATCH_EVENTS = 8              # pending events a question asks the studio to store
STORE_DELAY_SECONDS = 0.25          # or once the oldest pending event has waited this long
SHUTDOWN_STORE_SECONDS = 10.0       # how long a gateway shutting down tries to post its events
RESULT_TEXT_LIMIT = 64_000          # characters of a tool's result kept in its event
WRITE_BATCH = 100
RULES_REFRESH_SECONDS = 60
UNREACHABLE_STATUSES = (429, 502, 503, 504)   # after the client's own retries
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
REFUSED = ("resample", "best_of_n", "inject", "switch")


class GatewayError(Exception):
    """A gateway that cannot start as configured (an upstream that does not fit or does not
    answer, two upstreams offering one tool name); the message says which and why."""


# ---------------------------------------------------------------------------------------------
# Upstreams


@dataclass(frozen=True)
class Upstream:
    """``name``: what the gateway calls it; ``target``: a command line (started, spoken to over
    stdio) or an ``http(s)://`` URL (streamable HTTP)."""

    name: str
    target: str

    @property
    def is_url(self) -> bool:
        return self.target.startswith(("http://", "https://"))

    def transport(self) -> str | StdioServerParameters:
        """What the SDK's ``Client`` connects to."""
        if self.is_url:
            return self.target
        argv = shlex.split(self.target)
        return StdioServerParameters(command=argv[0], args=argv[1:])


def parse_upstream(spec: str) -> Upstream:
    """``NAME=COMMAND_OR_URL``; a spec that does not fit raises GatewayError saying why."""
    name, sep, target = spec.partition("=")
    name, target = name.strip(), target.strip()
    if not sep or not target:
        raise GatewayError(f"--upstream {spec!r}: write NAME=COMMAND or NAME=URL, e.g. "
                           "bank='python bank_server.py' or docs=http://127.0.0.1:9000/mcp")
    if not NAME.fullmatch(name):
        raise GatewayError(f"--upstream {spec!r}: the name {name!r} must be 1-64 letters, digits, "
                           "'_', '.' or '-', starting with a letter or digit")
    if not target.startswith(("http://", "https://")):
        try:
            argv = shlex.split(target)
        except ValueError as exc:
            raise GatewayError(f"--upstream {name}: the command {target!r} cannot be read "
                               f"({exc})") from None
        if not argv:
            raise GatewayError(f"--upstream {name}: the command is empty")
    return Upstream(name, target)


def upstreams_of(specs: Sequence[str]) -> list[Upstream]:
    found = [parse_upstream(spec) for spec in specs]
    if not found:
        raise GatewayError("give at least one --upstream NAME=COMMAND_OR_URL")
    names = [u.name for u in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise GatewayError(f"--upstream: the name {twice[0]!r} is given twice")
    return found


def tool_table(listed: Sequence[tuple[str, Sequence[types.Tool]]]
               ) -> dict[str, tuple[str, types.Tool]]:
    """Tool name -> (upstream name, tool); a name two upstreams offer raises GatewayError."""
    table: dict[str, tuple[str, types.Tool]] = {}
    for upstream, tools in listed:
        for tool in tools:
            if tool.name in table:
                raise GatewayError(
                    f"the tool {tool.name!r} is offered by both {table[tool.name][0]!r} and "
                    f"{upstream!r}: the gateway lists tools under their own names, so it cannot "
                    "tell which one a call means; run one gateway per upstream, or rename the "
                    "tool in one of them")
            table[tool.name] = (upstream, tool)
    return table


# ---------------------------------------------------------------------------------------------
# What the model reads when a call is refused


def _percent(value: Any) -> str:
    return "unknown" if not isinstance(value, (int, float)) else f"{value:.0%}"


def refusal_text(tool: str, answer: Mapping[str, Any], sentences: Mapping[str, str],
                 session: str) -> str:
    """The error text of a call the guard did not let through, in plain English: which rule,
    why, and what to do instead."""
    decision = answer.get("decision")
    lines = [f"The compliance guard did not let the call to {tool} through: "
             f"{answer.get('reason') or 'no reason given'}."]
    for entry in answer.get("rules_at_risk") or ():
        rule = entry.get("rule", "?")
        line = f"- Rule {rule}"
        if sentences.get(rule):
            line += f" (\"{sentences[rule]}\")"
        line += f", risk {_percent(entry.get('risk'))}"
        if entry.get("requires"):
            line += f"; it still requires: {entry['requires']}"
        lines.append(line + ".")
    status = answer.get("status")
    if status in ("approved", "denied", "timed_out"):
        who = answer.get("decided_by")
        note = (answer.get("note") or "").strip()
        if status == "denied":
            lines.append(f"A person ({who or 'a reviewer'}) denied this call on the Live page"
                         + (f": {note}" if note else "."))
        elif status == "timed_out":
            lines.append("Nobody answered on the Live page in time; the policy's default "
                         f"({answer.get('decision')}) applies.")
    if decision == "inject" and answer.get("inject"):
        lines.append(answer["inject"])
    if decision in ("resample", "best_of_n", "inject"):
        lines.append("Do not repeat this call as it is: choose another step.")
    elif decision == "switch":
        lines.append(f"The policy asks for a safer model ({answer.get('model') or 'unnamed'}); "
                     "the gateway cannot switch models, so choose another step.")
    elif decision == "stop":
        lines.append(f"The guard stopped session {session}: every later tool call in it is "
                     "refused.")
    return "\n".join(lines)


def tool_error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                is_error=True)


def result_event(tool: str, upstream: str, call_id: str, result: types.CallToolResult | None,
                 error: str | None = None) -> dict:
    """The live event of a tool's result: its structured content when it has one, else its
    text (cut at ``RESULT_TEXT_LIMIT`` characters, said so), else its content blocks."""
    data: dict[str, Any] = {"tool_result": tool, "tool_call_id": call_id, "upstream": upstream}
    if result is None:
        data["is_error"] = True
        return {"event_id": f"{call_id}-result", "input": error or "", "data": data}
    data["is_error"] = bool(result.is_error)
    value: Any
    if result.structured_content is not None:
        value = result.structured_content
    else:
        texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
        if len(texts) == len(result.content):
            value = _json_or_text("\n".join(texts))
        else:
            value = [block.model_dump(mode="json", by_alias=True, exclude_none=True)
                     for block in result.content]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > RESULT_TEXT_LIMIT:
        value = text[:RESULT_TEXT_LIMIT]
        data["truncated"] = f"the result had {len(text)} characters; the first " \
                            f"{RESULT_TEXT_LIMIT} are kept"
    return {"event_id": f"{call_id}-result", "input": value, "data": data}


# ---------------------------------------------------------------------------------------------
# The gateway


@dataclass
class _Session:
    """A session as the gateway sees it: its calls one at a time, its events not yet stored."""

    lock: anyio.Lock = field(default_factory=anyio.Lock)
    pending: list[dict] = field(default_factory=list)   # not confirmed stored, in order
    writing: anyio.Event | None = None
    unasked: int = 0                # pending events no question has asked the studio to store
    unasked_since: float = 0.0      # when the oldest of those was recorded
    quiet_since: float = 0.0        # the last call's end (or failed write): for the idle flush
    failure: str | None = None      # why the last write did not store the pending events
    stopped: str | None = None      # why every later call is refused
    refusals: int = 0               # refused proposals since the last call let through


class Gateway:
    """An MCP server (``self.server``, the SDK's low-level ``Server``) in front of upstream MCP
    servers, with the studio's guard on every tool call.

    ``client``: the studio's live API for the workspace (a token of it); ``fail_open``: let calls
    through unguarded when the studio cannot be reached (default: refuse them); ``session``: the
    session of calls that name none; ``human_wait``: the longest a call waits for a person;
    ``idle_flush``: seconds without a call after which a session's events are posted."""

    def __init__(self, client: StudioClient, upstreams: Sequence[Upstream], *,
                 fail_open: bool = False, session: str | None = None,
                 human_wait: float = HUMAN_WAIT_SECONDS, name: str = "compliance-studio-gateway",
                 idle_flush: float = IDLE_FLUSH_SECONDS, store_batch: int = STORE_BATCH_EVENTS,
                 store_delay: float = STORE_DELAY_SECONDS):
        self.client = client
        self.upstreams = list(upstreams)
        self.fail_open = fail_open
        self.default_session = session
        self.human_wait = human_wait
        self.idle_flush = idle_flush
        self.store_batch = store_batch
        self.store_delay = store_delay
        self.tools: dict[str, tuple[str, types.Tool]] = {}
        self.connections: dict[str, Client] = {}
        self.sessions: dict[str, _Session] = {}
        self.sentences: dict[str, str] = {}
        self._sentences_read = 0.0
        self._tasks: anyio.abc.TaskGroup | None = None
        self.server = Server(name, on_list_tools=self._list_tools,
                             on_call_tool=self._call_tool,
                             get_tool_input_schema=self._input_schema)

    # -----------------------------------------------------------------------------------------
    # Running

    @contextlib.asynccontextmanager
    async def connected(self) -> AsyncIterator[Gateway]:
        """Connect to every upstream and list its tools (GatewayError when one fails or two
        offer one name); on leaving, store what is pending and disconnect."""
        async with contextlib.AsyncExitStack() as stack:
            listed = []
            for upstream in self.upstreams:
                try:
                    connection = await stack.enter_async_context(Client(upstream.transport()))
                    tools = await _all_tools(connection)
                except GatewayError:
                    raise
                except Exception as exc:  # noqa: BLE001 - any failure to start is reported
                    raise GatewayError(f"upstream {upstream.name} ({upstream.target}) did not "
                                       f"answer as an MCP server: {_describe(exc)}") from exc
                self.connections[upstream.name] = connection
                listed.append((upstream.name, tools))
            self.tools = tool_table(listed)
            await self._read_sentences()
            self._tasks = await stack.enter_async_context(anyio.create_task_group())
            idle = anyio.CancelScope()
            self._tasks.start_soon(self._flush_idle_sessions, idle)
            try:
                yield self
            finally:
                idle.cancel()
                await self.store_pending()

    async def store_pending(self) -> None:
        """Post every session's pending events through the events route (shutting down): up
        to ``SHUTDOWN_STORE_SECONDS``, shielded from the cancellation that may be ending the
        gateway."""
        with anyio.move_on_after(SHUTDOWN_STORE_SECONDS, shield=True):
            for session_id, state in list(self.sessions.items()):
                if state.writing is not None and not state.writing.is_set():
                    await state.writing.wait()
                if state.pending:
                    state.writing = anyio.Event()
                    await self._write(session_id, state)

    async def serve_stdio(self) -> None:
        """Serve one client over this process's stdin/stdout."""
        from mcp.server.stdio import stdio_server

        if self.default_session is None:
            self.default_session = f"mcp-{uuid.uuid4().hex[:16]}"
        async with self.connected(), claimed_stdio() as pipes, \
                stdio_server(*(pipes or ())) as (read, write), \
                anyio.create_task_group() as serving:
            serving.start_soon(_cancel_on_sigterm, serving.cancel_scope)
            await self.server.run(read, write, self.server.create_initialization_options())
            serving.cancel_scope.cancel()

    def http_app(self, host: str = "127.0.0.1", path: str = "/mcp"):
        """The streamable-HTTP app (Starlette); serve it inside ``connected()``."""
        return self.server.streamable_http_app(streamable_http_path=path, host=host)

    async def serve_http(self, host: str, port: int, path: str = "/mcp",
                         ready: Callable[[], None] | None = None) -> None:
        import uvicorn

        gateway = self

        class Server(uvicorn.Server):
            async def shutdown(self, sockets=None):
                await super().shutdown(sockets)
                # Here, not after serve(): uvicorn raises the signal that stopped it again once
                # serve() is over, which ends the process before pending events are posted.
                await gateway.store_pending()

        app = self.http_app(host, path)
        server = Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                       lifespan="on"))
        async with self.connected():
            if ready is not None:
                ready()
            await server.serve()

    # -----------------------------------------------------------------------------------------
    # The MCP handlers

    async def _list_tools(self, ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool for _, tool in self.tools.values()])

    def _input_schema(self, name: str):
        found = self.tools.get(name)
        return found[1].input_schema if found else None

    async def _call_tool(self, ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        arguments = params.arguments or {}
        route = self.tools.get(name)
        if route is None:
            raise MCPError(code=types.INVALID_PARAMS,
                           message=f"no upstream of this gateway offers a tool named {name!r}")
        session_id = self.session_of(ctx, params)
        if session_id is None:
            return tool_error(
                "The compliance gateway cannot tell which session this call belongs to, so it "
                "did not make it: name the session in the call's _meta under "
                f"{SESSION_META_KEY!r} or in a Studio-Session HTTP header, or connect with the "
                "initialize handshake so that the MCP session names it.")
        state = self.sessions.setdefault(session_id, _Session())
        async with state.lock:
            return await self._guarded_call(session_id, state, name, route[0], arguments)

    def session_of(self, ctx, params) -> str | None:
        """The call's session: ``_meta`` first, then the Studio-Session header, then the MCP
        session, then the gateway's own."""
        meta = params.meta or {}
        named = meta.get(SESSION_META_KEY) if isinstance(meta, Mapping) else None
        if isinstance(named, str) and named.strip():
            return named.strip()
        headers = getattr(getattr(ctx, "request", None), "headers", None)
        if headers is not None:
            for header in (SESSION_HEADER, MCP_SESSION_HEADER):
                value = headers.get(header)
                if value and value.strip():
                    return value.strip()
        return self.default_session

    async def _guarded_call(self, session_id: str, state: _Session, name: str, upstream: str,
                            arguments: dict) -> types.CallToolResult:
        if state.stopped:
            return tool_error(state.stopped)
        began = time.perf_counter()
        if len(state.pending) > MAX_TAKEN:
            # More than one question carries: stored first, through the events route.
            failure = await self._flush(session_id, state)
            if failure and not self.fail_open:
                return tool_error(
                    f"The compliance gateway did not make the call to {name}: the studio could "
                    f"not be reached to store the earlier calls of session {session_id} "
                    f"({failure}). The gateway fails closed: no call goes through unguarded.")
        flushed = time.perf_counter()
        event = {"output": {"tool": name, "args": arguments}}
        call_id = uuid.uuid4().hex
        answer = await self._ask(session_id, state, name, event, call_id)
        asked = time.perf_counter()
        if isinstance(answer, types.CallToolResult):
            return answer   # refused before the guard could answer
        if answer is not None:
            decision = answer.get("decision")
            if decision == "stop":
                text = refusal_text(name, answer, await self._sentences_for(answer), session_id)
                state.stopped = (f"The compliance guard stopped session {session_id} earlier, "
                                 f"so the call to {name} was not made; every tool call in this "
                                 f"session is refused. What stopped it:\n{text}")
                await self._end(session_id, state)
                return tool_error(text)
            if decision != "allow":
                state.refusals += 1
                if decision not in REFUSED:
                    # ask_human still pending when the gateway stopped waiting, or a decision
                    # this gateway does not know: neither is a permission.
                    return tool_error(_unsettled(name, answer, self.human_wait))
                return tool_error(refusal_text(name, answer,
                                               await self._sentences_for(answer), session_id))
        state.refusals = 0
        event["event_id"] = call_id
        connection = self.connections[upstream]
        try:
            result = await connection.call_tool(name, arguments)
        except MCPError as exc:
            self._record(session_id, state, [event, result_event(
                name, upstream, call_id, None, f"MCP error {exc.error.code}: "
                f"{exc.error.message}")])
            raise
        except Exception as exc:  # noqa: BLE001 - the upstream went away mid-call
            # Whether the tool ran is unknown: the call is stored with what became of it.
            failure = f"upstream {upstream} did not answer: {_describe(exc)}"
            self._record(session_id, state, [event, result_event(name, upstream, call_id, None,
                                                                 failure)])
            raise MCPError(code=types.INTERNAL_ERROR, message=failure) from exc
        self._record(session_id, state, [event, result_event(name, upstream, call_id, result)])
        if log.isEnabledFor(logging.DEBUG):
            done = time.perf_counter()
            log.debug("timing session=%s tool=%s earlier_events_ms=%.2f guard_ms=%.2f "
                      "upstream_ms=%.2f", session_id, name, (flushed - began) * 1000,
                      (asked - flushed) * 1000, (done - asked) * 1000)
        return result

    async def _ask(self, session_id: str, state: _Session, name: str, event: dict,
                   call_id: str) -> dict | types.CallToolResult | None:
        """The guard's settled answer; None when the studio could not be reached and the
        gateway fails open; a tool error when the call must be refused without an answer.
        The question carries the session's events not confirmed stored yet (``taken``)."""
        try:
            try:
                answer = await self._question(session_id, state, event, call_id)
            except StudioError as exc:
                if exc.status not in (413, 422) or not (exc.field or "").startswith("taken"):
                    raise
                # An event the studio will not take (it refuses it by name): posted through
                # the events route, which stores the others and refuses it loudly, then asked
                # again without it.
                log.warning("session %s: the guard refused the earlier events (%s); they go "
                            "through the events route", session_id, exc)
                await self._flush(session_id, state)
                answer = await self._question(session_id, state, event, call_id)
            if answer.get("decision") == "ask_human" and answer.get("status") == "pending":
                log.info("session %s: %s waits for a person on the Live page", session_id, name)
                answer = await anyio.to_thread.run_sync(
                    lambda: self.client.wait_for_decision(session_id, call_id, self.human_wait),
                    abandon_on_cancel=True)
            return answer
        except StudioError as exc:
            if exc.status == 409 and "ended" in (exc.detail or ""):
                state.stopped = (f"Session {session_id} has ended in the studio, so the call to "
                                 f"{name} was not made; every tool call in it is refused "
                                 f"({exc.detail}).")
                return tool_error(state.stopped)
            if exc.status is None or exc.status in UNREACHABLE_STATUSES:
                if self.fail_open:
                    log.warning("session %s: the studio could not be reached (%s); %s goes "
                                "through unguarded (fail open)", session_id, exc, name)
                    return None
                return tool_error(
                    f"The compliance gateway did not make the call to {name}: the studio could "
                    f"not be reached to ask its guard ({exc}). The gateway fails closed: no "
                    "call goes through unguarded.")
            return tool_error(
                f"The compliance gateway did not make the call to {name}: the studio refused "
                f"its question to the guard ({exc}).")

    async def _question(self, session_id: str, state: _Session, event: dict,
                        call_id: str) -> dict:
        taken = list(state.pending[:MAX_TAKEN])
        # Stored in batches: the studio decides on every pending event, and stores them after
        # answering once they are many or the oldest has waited long enough.
        store = bool(state.unasked) and (
            state.unasked >= self.store_batch
            or time.monotonic() - state.unasked_since >= self.store_delay)
        answer = await self.client.guard_async(session_id, event, decision_id=call_id,
                                               attempt=min(state.refusals, 1_000), taken=taken,
                                               store_taken=store)
        if store:
            state.unasked = 0
        _confirm(state, answer.get("stored") or ())
        return answer

    # -----------------------------------------------------------------------------------------
    # Storing events, in order: carried by the next question, or posted when the session is idle

    def _record(self, session_id: str, state: _Session, events: list[dict]) -> None:
        if not state.unasked:
            state.unasked_since = time.monotonic()
        state.unasked += len(events)
        state.pending.extend(events)
        state.quiet_since = time.monotonic()
        if len(state.pending) > MAX_PENDING_EVENTS:
            dropped = len(state.pending) - MAX_PENDING_EVENTS
            del state.pending[:dropped]
            log.error("session %s: %d events could not be stored and were dropped (the studio "
                      "was unreachable for too long; at most %d wait)", session_id, dropped,
                      MAX_PENDING_EVENTS)

    async def _flush_idle_sessions(self, scope: anyio.CancelScope) -> None:
        """Post the events of every session without a call for ``idle_flush`` seconds (the
        next question would have carried them; there may be none)."""
        with scope:
            while True:
                await anyio.sleep(min(IDLE_CHECK_SECONDS, self.idle_flush))
                now = time.monotonic()
                for session_id, state in list(self.sessions.items()):
                    if (state.pending and not state.lock.locked()
                            and now - state.quiet_since >= self.idle_flush):
                        self._write_soon(session_id, state)

    def _write_soon(self, session_id: str, state: _Session) -> None:
        if state.writing is None or state.writing.is_set():
            state.writing = anyio.Event()
            self._tasks.start_soon(self._write, session_id, state)

    async def _write(self, session_id: str, state: _Session) -> None:
        try:
            while state.pending:
                batch = state.pending[:WRITE_BATCH]
                try:
                    answer = await anyio.to_thread.run_sync(
                        self.client.send_events, session_id, batch)
                except StudioError as exc:
                    if exc.status is None or exc.status in UNREACHABLE_STATUSES:
                        state.failure = str(exc)
                        state.quiet_since = time.monotonic()   # the idle flush tries again
                        log.warning("session %s: %d events wait to be stored: %s", session_id,
                                    len(state.pending), exc)
                        return
                    # Refused for good (the session ended, an event that does not fit): kept
                    # nowhere else, so said loudly.
                    log.error("session %s: the studio refused %d events: %s", session_id,
                              len(batch), exc)
                    answer = None
                if answer and answer.get("rejected"):
                    for item in answer.get("events") or ():
                        if item.get("status") == "error":
                            log.error("session %s: event %s was refused: %s", session_id,
                                      item.get("index"), item.get("error"))
                _confirm(state, [e.get("event_id") for e in batch])
                state.failure = None
        finally:
            if state.writing is not None:
                state.writing.set()

    async def _flush(self, session_id: str, state: _Session) -> str | None:
        """Wait until the session's earlier events are stored (trying once more when the last
        write failed); why they could not be, or None."""
        if state.writing is not None and not state.writing.is_set():
            await state.writing.wait()
        if state.pending:
            self._write_soon(session_id, state)
            await state.writing.wait()
        return state.failure if state.pending else None

    async def _end(self, session_id: str, state: _Session) -> None:
        await self._flush(session_id, state)
        try:
            await anyio.to_thread.run_sync(self.client.end, session_id)
        except StudioError as exc:
            if exc.status == 404:   # no event of it was ever stored: nothing to end
                return
            log.error("session %s: the guard stopped it, but ending it in the studio failed: "
                      "%s", session_id, exc)

    # -----------------------------------------------------------------------------------------
    # The rules' own sentences

    async def _read_sentences(self) -> None:
        self._sentences_read = time.monotonic()
        try:
            rules = await anyio.to_thread.run_sync(self.client.rules)
        except StudioError as exc:
            log.warning("the rules' sentences could not be read (%s): refusals name rules "
                        "without them", exc)
            return
        self.sentences = rule_sentences(rules)

    async def _sentences_for(self, answer: Mapping[str, Any]) -> dict[str, str]:
        names = {entry.get("rule") for entry in answer.get("rules_at_risk") or ()}
        if names - set(self.sentences) and (
                time.monotonic() - self._sentences_read > RULES_REFRESH_SECONDS):
            await self._read_sentences()
        return self.sentences


def gateway_for(studio_url: str, workspace: str, token: str, upstream_specs: Sequence[str], *,
                timeout: float = 10.0, **options) -> Gateway:
    """A gateway to the studio at ``studio_url`` for one workspace (its token), in front of the
    upstreams ``NAME=COMMAND_OR_URL``; ``options`` as for ``Gateway``.  GatewayError when a
    setting does not fit."""
    if not token:
        raise GatewayError("a token of the workspace is needed: --token or STUDIO_TOKEN")
    if not studio_url.startswith(("http://", "https://")):
        raise GatewayError(f"--studio-url {studio_url!r} must start with http:// or https://")
    client = StudioClient(studio_url, workspace, token=token, timeout=timeout)
    return Gateway(client, upstreams_of(upstream_specs), **options)


def rule_sentences(rules: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Rule name -> its sentence: the description its author wrote, else the English of its
    approved version."""
    found = {}
    for rule in rules:
        sentence = (rule.get("description") or "").strip()
        latest = rule.get("latest_version") or {}
        if not sentence and latest.get("number") == rule.get("approved_version"):
            sentence = (latest.get("english") or "").strip()
        if sentence and rule.get("name"):
            found[rule["name"]] = sentence
    return found


def _confirm(state: _Session, event_ids) -> None:
    """Drop from ``pending`` the events the studio confirmed stored (or refused for good)."""
    done = set(event_ids)
    if done:
        state.pending = [e for e in state.pending if e.get("event_id") not in done]
        state.unasked = min(state.unasked, len(state.pending))


def _json_or_text(text: str) -> Any:
    """A text that is a JSON object or array, as that value (so rules can read its fields);
    any other text as it is."""
    if text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _unsettled(name: str, answer: Mapping[str, Any], waited: float) -> str:
    if answer.get("status") == "pending":
        return (f"The compliance guard did not let the call to {name} through: a person must "
                f"decide on the Live page ({answer.get('reason') or 'no reason given'}), and "
                f"nobody answered within the gateway's {waited:g} s.")
    return (f"The compliance guard did not let the call to {name} through: its decision "
            f"{answer.get('decision')!r} is not one this gateway knows, and an unknown answer "
            "is not a permission.")


async def _cancel_on_sigterm(scope: anyio.CancelScope) -> None:
    """A stdio gateway told to stop (SIGTERM, as a host ends it) stops serving and posts its
    pending events first (``connected``), rather than dying with them."""
    import signal

    try:
        with anyio.open_signal_receiver(signal.SIGTERM) as signals:
            async for _ in signals:
                scope.cancel()
                return
    except (NotImplementedError, ValueError, RuntimeError):
        return   # no signals here (not the main thread, or a platform without them)


async def _all_tools(connection: Client) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor = None
    for _ in range(1_000):
        page = await connection.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools
    raise GatewayError("an upstream's tool list never ended (1,000 pages)")


def _describe(exc: BaseException) -> str:
    """An exception in a line; an exception group by its first leaf."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
