"""The studio's guard in front of an OpenAI Agents SDK agent (the ``openai-agents`` package).

    from agents import Agent
    from studio.client import StudioClient
    from studio.client.openai_agents import AgentGuard

    guard = AgentGuard(StudioClient(url, "acme", token=token), session="run-42")
    result = guard.run_sync(Agent(name="payments", tools=[get_balance, send_money]),
                            "Send 50 to bob.")

Only this module needs the SDK; ``studio.client`` itself stays the standard library, so it is
imported on its own (``import studio.client.openai_agents``) where the SDK is installed.

How the SDK's own hooks are used (as it documents them):

- every function tool of the agent (and of the agents it hands off to) gets a **tool input
  guardrail**, which the runner calls with the tool call before the tool runs.  It asks the
  studio's guard about ``{"output": {"tool": name, "args": args}}``:

  - ``allow``: the call is recorded as a live event and the tool runs;
  - ``resample``, ``inject``, ``switch`` (and ``best_of_n``, which needs candidates the SDK does
    not sample): the call is **rejected** (``ToolGuardrailFunctionOutput.reject_content``): the
    tool does not run, nothing is recorded, and the model reads, in place of the tool's result,
    that the compliance guard refused the call and the guard's reason (and, for ``inject``, its
    text).  The model then proposes again; each proposal after a refusal is the next
    ``attempt`` of the same step, so the workspace's ``max_resamples`` and ``fallback`` apply;
  - ``ask_human``: the guardrail waits for a person on the Live page (up to ``human_timeout``
    seconds and the policy's own timeout), then applies what comes back;
  - ``stop`` (a denial, a timed-out question that defaults to stop, the fallback after too many
    proposals): the guardrail **trips** (``raise_exception``), so the runner raises
    ``ToolInputGuardrailTripwireTriggered`` (its ``output.output_info`` is the guard's answer) and
    the run ends.  ``AgentGuard.run`` then ends the studio session and raises ``GuardStopped``.

- **run hooks** (``RunHooks``) record the other steps as live events, in order: each user message
  the model is sent (once: a message whose text the session already recorded as often as the
  conversation holds it is not recorded again), any text the model writes beside its tool
  calls, each tool's result (``on_tool_end``) and the final answer (``on_agent_end``).

The events (the same shapes as ``examples/openai_tool_loop.py``):

    {"input": "Send 50 to bob.", "data": {"role": "user"}}
    {"output": {"tool": "get_balance", "args": {...}}, "data": {"tool_call_id": ..., "agent": ...}}
    {"input": <the tool's result>, "data": {"tool_result": "get_balance", "tool_call_id": ...}}
    {"output": "Sent 50 to bob.", "data": {"role": "assistant", "final": true, "agent": ...}}

A studio that cannot be reached (or refuses a request) fails the run: the guard fails closed, and
no tool runs unasked.  ``AgentGuard.run`` raises the client's ``StudioError`` (``Runner.run``
raises the SDK's ``UserError`` around it).  The client is synchronous; its requests run in
a worker thread, one at a time and in order, so the event loop is never blocked.  Keep
``ModelSettings(parallel_tool_calls=False)`` for the guard to see each call after the one before
it has run (parallel calls are each asked and recorded, one after another, before they run).
Hosted tools (web search, code interpreter...) and MCP servers' tools never reach a tool
guardrail: ``AgentGuard.agent`` refuses an agent that has them unless told ``unguarded_ok=True``
(put MCP servers behind the studio's MCP gateway instead).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

try:
    from agents import (
        Agent,
        AgentsException,
        FunctionTool,
        RunHooks,
        Runner,
        ToolGuardrailFunctionOutput,
        ToolInputGuardrail,
        ToolInputGuardrailData,
        ToolInputGuardrailTripwireTriggered,
    )
except ImportError as exc:  # pragma: no cover - said once, clearly
    raise ImportError("studio.client.openai_agents needs the OpenAI Agents SDK: "
                      "pip install openai-agents") from exc

from .core import StudioClient
from .errors import DecisionPending, GuardStopped, StudioError
from .words import change_words, end_words

GUARDRAIL_NAME = "compliance_studio_guard"
REFUSED = "The compliance guard refused this call; it did not run."


class AgentGuard:
    """One live session of the studio for one agent run (or several runs of one conversation).

    ``guard=False`` only records the events (nothing is asked, every call runs: the violations
    show up after the fact).  ``human_timeout`` is how long a call waits for a person
    (``ask_human``) before it is stopped.  ``log`` receives one line per thing that happened
    (``print`` in the example).  After a run, ``events`` holds what was recorded, ``answers``
    every guard answer, ``refused`` the answers that refused a call, ``stopped`` the reason of a
    stop (or None) and ``end_answer`` the studio's answer to the session's end.
    """

    def __init__(self, client: StudioClient, session: str, *, guard: bool = True,
                 human_timeout: float = 300.0, log: Callable[[str], None] | None = None):
        self.client = client
        self.session = session
        self.guarding = guard
        self.human_timeout = human_timeout
        self.log = log or (lambda line: None)
        self.events: list[dict] = []
        self.answers: list[dict] = []
        self.refused: list[dict] = []
        self.stopped: str | None = None
        self.end_answer: dict | None = None
        self.input_guardrail = ToolInputGuardrail(guardrail_function=self._check_call,
                                                  name=GUARDRAIL_NAME)
        self.hooks = _StudioHooks(self)
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._step_id = uuid.uuid4().hex  # the step a refused call is proposed again in
        self._attempt = 0
        self._users_recorded: Counter[str] = Counter()

    # -----------------------------------------------------------------------------------------
    # Putting it in front of an agent

    def agent(self, agent: Agent, *, unguarded_ok: bool = False) -> Agent:
        """A copy of ``agent`` (and of the agents it hands off to) whose every function tool
        has the studio's tool input guardrail; the original is left as it was."""
        return self._guarded(agent, {}, unguarded_ok)

    def _guarded(self, agent: Agent, done: dict[int, Agent], unguarded_ok: bool) -> Agent:
        if id(agent) in done:
            return done[id(agent)]
        tools = []
        for tool in agent.tools:
            if isinstance(tool, FunctionTool):
                guardrails = [g for g in tool.tool_input_guardrails or ()
                              if g.get_name() != GUARDRAIL_NAME]
                tools.append(dataclasses.replace(
                    tool, tool_input_guardrails=[*guardrails, self.input_guardrail]))
            elif unguarded_ok:
                tools.append(tool)
            else:
                raise TypeError(f"agent {agent.name!r}: its tool {_tool_name(tool)!r} is not a "
                                "function tool, so no tool guardrail sees its calls; pass "
                                "unguarded_ok=True to run it unguarded")
        if agent.mcp_servers and not unguarded_ok:
            raise TypeError(f"agent {agent.name!r}: the tools of its MCP servers never reach a "
                            "tool guardrail; put them behind the studio's MCP gateway, or pass "
                            "unguarded_ok=True")
        copy = agent.clone(tools=tools)
        done[id(agent)] = copy
        handoffs = []
        for handoff in agent.handoffs:
            if isinstance(handoff, Agent):
                handoffs.append(self._guarded(handoff, done, unguarded_ok))
            elif unguarded_ok:
                handoffs.append(handoff)
            else:
                raise TypeError(f"agent {agent.name!r}: a Handoff object (to "
                                f"{getattr(handoff, 'agent_name', '?')!r}) hides its agent's "
                                "tools; hand off to guard.agent(that agent), or pass "
                                "unguarded_ok=True")
        copy.handoffs = handoffs
        return copy

    async def run(self, agent: Agent, input: Any, *, end: bool = True, **runner_options):
        """``Runner.run`` of the guarded ``agent`` with the recording hooks; the session is
        ended afterwards unless ``end=False`` (a conversation that goes on).  A stop ends the
        session too and raises ``GuardStopped`` (from the SDK's tripwire)."""
        if "hooks" in runner_options:
            raise TypeError("AgentGuard.run brings its own hooks (guard.hooks); to use yours, "
                            "call Runner.run(guard.agent(agent), input, hooks=...) with hooks "
                            "that also call guard.hooks, then guard.end()")
        try:
            result = await Runner.run(self.agent(agent), input, hooks=self.hooks,
                                      **runner_options)
        except ToolInputGuardrailTripwireTriggered as trip:
            if trip.guardrail.get_name() != GUARDRAIL_NAME:
                raise
            answer = trip.output.output_info or {}
            if end:
                await self.end()
            raise GuardStopped(self.stopped or answer.get("reason") or "the guard stopped",
                               answer, list(self.answers)) from trip
        except AgentsException as error:
            # The SDK wraps what a guardrail raised ("Error running tool ..."): the studio's
            # refusal is said as the client says it everywhere else.
            cause = error.__cause__
            if not isinstance(cause, StudioError):
                raise
            raise StudioError(cause.status, cause.detail, cause.field, cause.body,
                              cause.retry_after) from error
        if end:
            await self.end()
        return result

    def run_sync(self, agent: Agent, input: Any, **options):
        """``run`` for code that has no event loop of its own."""
        return asyncio.run(self.run(agent, input, **options))

    async def end(self) -> dict:
        """End the studio session: every rule gets its end verdict (``end_answer``)."""
        self.end_answer = await self._call(self.client.end, self.session)
        for rule in self.end_answer.get("rules", ()):
            self.log(f"studio: {end_words(rule)}")
        return self.end_answer

    # -----------------------------------------------------------------------------------------
    # The tool input guardrail

    async def _check_call(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        context = data.context
        event = {"output": {"tool": context.tool_name, "args": _arguments(context.tool_arguments)},
                 "data": {"tool_call_id": context.tool_call_id, "agent": data.agent.name}}
        async with self._serial():
            if not self.guarding:
                await self._record(event, locked=True)
                return ToolGuardrailFunctionOutput.allow()
            decision_id = f"{self._step_id}-{self._attempt}"
            answer = await asyncio.to_thread(self.client.guard, self.session, event,
                                             decision_id=decision_id, attempt=self._attempt)
            self.answers.append(answer)
            answer = await asyncio.to_thread(self._settled, answer)
            decision = answer.get("decision")
            self.log(f"guard: {decision} - {answer.get('reason')}")
            if decision == "allow":
                event["event_id"] = self._step_id
                self._step_id, self._attempt = uuid.uuid4().hex, 0
                await self._record(event, locked=True)
                return ToolGuardrailFunctionOutput.allow(output_info=answer)
            if decision == "stop":
                self.stopped = answer.get("reason") or "the guard stopped this step"
                return ToolGuardrailFunctionOutput.raise_exception(output_info=answer)
            # resample, inject, switch, best_of_n: the model proposes again, told why.
            self._attempt += 1
            self.refused.append(answer)
            return ToolGuardrailFunctionOutput.reject_content(refusal_message(answer),
                                                              output_info=answer)

    def _settled(self, answer: dict) -> dict:
        """A question to a person, waited for; else the answer as it is (in a worker thread)."""
        if answer.get("decision") != "ask_human" or answer.get("status") != "pending":
            return answer
        self.log(f"guard: waiting for a person - {answer.get('reason')}")
        later = self.client.wait_for_decision(self.session, answer["decision_id"],
                                              self.human_timeout)
        self.answers.append(later)
        if later.get("status") == "pending":
            reason = (f"nobody answered within {self.human_timeout:g} s: "
                      f"{later.get('reason') or 'a person must decide'}")
            return {**later, "decision": "stop", "reason": reason,
                    "error": DecisionPending.__name__}
        if later.get("decision") == "ask_human":
            return {**later, "decision": "stop",
                    "reason": "the guard's answer to a question was to ask again"}
        return later

    # -----------------------------------------------------------------------------------------
    # Recording

    def _serial(self) -> asyncio.Lock:
        """The lock that keeps the studio's requests in order: one per event loop (each
        ``run_sync`` has its own loop, and a lock waited on in one cannot be used in another)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]

    async def _record(self, event: dict, *, locked: bool = False) -> dict:
        if not locked:
            async with self._serial():
                return await self._record(event, locked=True)
        event.setdefault("event_id", uuid.uuid4().hex)
        answer = await asyncio.to_thread(self.client.send_events, self.session, [event])
        self.events.append(event)
        for change in (answer.get("events") or [{}])[0].get("changes") or ():
            self.log(f"studio: {change_words(change)}")
        return answer

    async def _call(self, function, *args):
        async with self._serial():
            return await asyncio.to_thread(function, *args)


class _StudioHooks(RunHooks):
    """The run's other steps, recorded as live events in the order the runner reaches them."""

    def __init__(self, guard: AgentGuard):
        self.guard = guard

    async def on_llm_start(self, context, agent, system_prompt, input_items) -> None:
        # The model is sent the whole conversation each time (and a later run may be given the
        # earlier one's items again): a user message is new when the conversation holds more
        # messages of that text than were recorded.
        seen: Counter[str] = Counter()
        for item in input_items:
            if not (isinstance(item, dict) and item.get("role") == "user"):
                continue
            text = _text_of(item.get("content"))
            seen[text] += 1
            if seen[text] > self.guard._users_recorded[text]:
                await self.guard._record({"input": text, "data": {"role": "user"}})
                self.guard._users_recorded[text] += 1

    async def on_llm_end(self, context, agent, response) -> None:
        items = [_plain(item) for item in response.output]
        if not any(item.get("type") == "function_call" for item in items):
            return  # the final answer: on_agent_end records it
        for item in items:
            if item.get("type") == "message":
                text = _text_of(item.get("content"))
                if text:
                    await self.guard._record({"output": text, "data": {
                        "role": "assistant", "agent": agent.name}})

    async def on_tool_end(self, context, agent, tool, result) -> None:
        name = getattr(context, "tool_name", None) or _tool_name(tool)
        self.guard.log(f"tool call ran: {name}")
        await self.guard._record({"input": _json_safe(result), "data": {
            "tool_result": name, "tool_call_id": getattr(context, "tool_call_id", None)}})

    async def on_agent_end(self, context, agent, output) -> None:
        self.guard.log(f"assistant: {output}")
        await self.guard._record({"output": _json_safe(output), "data": {
            "role": "assistant", "final": True, "agent": agent.name}})


# ---------------------------------------------------------------------------------------------
# Words and shapes

def refusal_message(answer: dict) -> str:
    """What the model reads in place of a refused call's result."""
    reason = str(answer.get("reason") or "a rule of the workspace is at risk").rstrip()
    parts = [REFUSED, f"Reason: {reason}" + ("" if reason.endswith((".", "!", "?")) else ".")]
    for rule in answer.get("rules_at_risk") or ():
        if rule.get("rule"):
            still = f" (it still requires: {rule['requires']})" if rule.get("requires") else ""
            parts.append(f"Rule at risk: {rule['rule']}{still}.")
    if answer.get("decision") == "inject" and answer.get("inject"):
        parts.append(str(answer["inject"]))
    parts.append("Propose another step that complies.")
    return " ".join(parts)


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw or "{}")
    except ValueError:
        return {"arguments": raw}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _plain(item: Any) -> dict:
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    return dump(exclude_unset=False) if dump else {}


def _json_safe(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return str(value)


def _tool_name(tool: Any) -> str:
    return str(getattr(tool, "name", type(tool).__name__))
