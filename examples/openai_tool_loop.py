"""A guarded OpenAI-style tool-calling loop: each tool call the model asks for becomes a studio
event, ``{"output": {"tool": name, "args": args}}``, and is asked of the guard *before* it runs.
The model's tool results and its final answer are recorded too, so the studio sees the whole
session.

Set up a workspace with an approved rule that a payment needs a balance check first:

    !tool_call:send_money W tool_call:get_balance

and a token for it (the workspace's Tokens page), then run, from the repository's root:

    STUDIO_URL=http://127.0.0.1:8000 STUDIO_WORKSPACE=acme STUDIO_TOKEN=<token> \\
        python examples/openai_tool_loop.py [--session ID] [--samples N] [--no-guard]

``STUDIO_WEBHOOK_SECRET=whsec_...`` signs the requests instead of a token.  ``--no-guard`` only
records the events (the violation shows up after the fact, and the payment runs).  ``--samples
N`` samples N answers a turn: the first is the proposal, the others its candidates (best_of_n).

No OpenAI key is needed: a scripted stand-in model answers, with the same
``chat.completions.create(model=..., messages=..., tools=...)`` shape.  Its first impulse is to
pay before checking the balance; asked again (resample), given a hint (inject) or another model
(switch), it checks the balance first.  With the ``openai`` package installed and
``OPENAI_API_KEY`` set, a real model (``OPENAI_MODEL``, default gpt-4o-mini) answers instead.

An agent project can copy ``studio/client`` (standard library only) next to its code.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

try:
    from studio.client import (GuardedSession, GuardStopped, Proposal, StudioClient,
                               StudioError, change_words, end_words)
except ImportError:  # run from a checkout without installing it
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from studio.client import (GuardedSession, GuardStopped, Proposal, StudioClient,
                               StudioError, change_words, end_words)

SYSTEM = ("You are a payments assistant. Use the tools to do what the user asks, then answer "
          "in one sentence.")
TASK = "Send 50 to bob from my account."
DEFAULT_MODEL = "stand-in"

TOOLS = [
    {"type": "function", "function": {
        "name": "get_balance", "description": "The balance of an account.",
        "parameters": {"type": "object", "properties": {"account": {"type": "string"}},
                       "required": ["account"]}}},
    {"type": "function", "function": {
        "name": "send_money", "description": "Send money from the user's account.",
        "parameters": {"type": "object", "properties": {"to": {"type": "string"},
                                                        "amount": {"type": "number"}},
                       "required": ["to", "amount"]}}},
]


# ---------------------------------------------------------------------------------------------
# The tools (pretend ones)

class Bank:
    def __init__(self, balance: float = 120.0):
        self.balance = balance
        self.calls: list[tuple[str, dict]] = []  # every tool call that actually ran

    def run(self, name: str, args: dict) -> dict:
        self.calls.append((name, args))
        if name == "get_balance":
            return {"account": args.get("account", "me"), "balance": self.balance}
        if name == "send_money":
            amount = float(args.get("amount", 0))
            self.balance -= amount
            return {"sent": amount, "to": args.get("to"), "balance": self.balance}
        return {"error": f"no tool {name}"}


# ---------------------------------------------------------------------------------------------
# A stand-in for the OpenAI client: client.chat.completions.create(...) -> a ChatCompletion-like
# object (choices[i].message.content / .tool_calls[j].function.name / .arguments).

class StandInModel:
    """Scripted: pays at once on a first ask; checks the balance first when asked again in the
    same state, given a hint, or asked as another model."""

    def __init__(self):
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))
        self.asked: dict[str, int] = {}
        self.requests: list[dict] = []  # (model, hinted) per call, for the curious

    def create(self, *, model: str, messages: list[dict], tools: list[dict] | None = None,
               n: int = 1, **_: Any):
        hinted = any(m["role"] == "system" and m is not messages[0] for m in messages)
        state = json.dumps([m for m in messages if m["role"] != "system"], sort_keys=True)
        times = self.asked[state] = self.asked.get(state, 0) + 1
        self.requests.append({"model": model, "hinted": hinted})
        careful = hinted or times > 1 or model != DEFAULT_MODEL
        results = _tool_results(messages)
        choices = []
        for index in range(n):
            if "send_money" in results:
                message = _text(f"Sent 50 to bob; the balance is now "
                                f"{results['send_money']['balance']:g}.")
            elif "get_balance" in results:
                message = _call("send_money", {"to": "bob", "amount": 50})
            elif careful or index > 0:
                message = _call("get_balance", {"account": "me"})
            else:
                message = _call("send_money", {"to": "bob", "amount": 50})
            finish = "tool_calls" if message.tool_calls else "stop"
            choices.append(SimpleNamespace(index=index, message=message, finish_reason=finish))
        return SimpleNamespace(id=f"chatcmpl-{uuid.uuid4().hex[:12]}", model=model,
                               choices=choices)


def _tool_results(messages: list[dict]) -> dict[str, dict]:
    names = {call["id"]: call["function"]["name"]
             for m in messages if m["role"] == "assistant" for call in m.get("tool_calls") or ()}
    return {names.get(m["tool_call_id"], "?"): json.loads(m["content"])
            for m in messages if m["role"] == "tool"}


def _call(name: str, args: dict):
    call = SimpleNamespace(id=f"call_{uuid.uuid4().hex[:12]}", type="function",
                           function=SimpleNamespace(name=name, arguments=json.dumps(args)))
    return SimpleNamespace(role="assistant", content=None, tool_calls=[call])


def _text(content: str):
    return SimpleNamespace(role="assistant", content=content, tool_calls=None)


# ---------------------------------------------------------------------------------------------
# Between chat messages and studio events

def as_event(choice) -> dict:
    """A model's answer as a studio event: its first tool call, or its text."""
    message = choice.message
    if message.tool_calls:
        call = message.tool_calls[0]  # one call a turn (parallel_tool_calls=False)
        try:
            args = json.loads(call.function.arguments or "{}")
        except ValueError:
            args = {"arguments": call.function.arguments}
        return {"output": {"tool": call.function.name, "args": args},
                "data": {"tool_call_id": call.id}}
    return {"output": message.content or "", "data": {"stop_reason": choice.finish_reason}}


def as_message(choice) -> dict:
    """The assistant message to append to the conversation (its first tool call only)."""
    message = choice.message
    out: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        call = message.tool_calls[0]
        out["tool_calls"] = [{"id": call.id, "type": "function", "function": {
            "name": call.function.name, "arguments": call.function.arguments}}]
    return out


# ---------------------------------------------------------------------------------------------
# The loop

def run(session: GuardedSession, llm, *, task: str = TASK, model: str = DEFAULT_MODEL,
        bank: Bank | None = None, guarded: bool = True, samples: int = 1, max_turns: int = 8,
        log: Callable[[str], None] = print) -> dict:
    """Runs the conversation to the model's final answer (or the guard's stop) and ends the
    session.  Returns what happened: the messages, the tool calls that ran, each step taken,
    the stop reason if any, the final answer and the session's end verdicts."""
    bank = bank or Bank()
    messages: list[dict] = [{"role": "system", "content": SYSTEM},
                            {"role": "user", "content": task}]
    session.record([{"input": task, "data": {"role": "user"}}])
    steps, stopped, answer = [], None, None

    for _ in range(max_turns):
        sampled: list = []  # the choices of the latest proposal
        refused: list = []  # the first choice of each earlier proposal of this step, newest first

        def propose(hint: str | None, switch_to: str | None):
            prompt = list(messages)
            if hint:
                prompt.append({"role": "system", "content": f"Compliance note: {hint}"})
            extra = {"n": samples} if samples > 1 else {}
            completion = llm.chat.completions.create(
                model=switch_to or model, messages=prompt, tools=TOOLS,
                parallel_tool_calls=False, **extra)
            if sampled:
                refused.insert(0, sampled[0])
            sampled[:] = completion.choices
            events = [as_event(choice) for choice in completion.choices]
            return Proposal(events[0], candidates=events[1:] or None)

        if guarded:
            try:
                step = session.step(propose)
            except GuardStopped as stop:
                stopped = stop.reason
                log(f"guard: stop - {stop.reason}")
                break
            for earlier in step.answers[:-1]:
                log(f"guard: {earlier.get('decision')} - {earlier.get('reason')}")
            log(f"guard: {step.answer.get('decision')} - {step.answer.get('reason')}")
            # The guard may pick one of the latest proposal's other samples or, once the
            # policy's resamples are spent, an earlier proposal (the client sends both).
            choices = [*sampled, *refused]
            choice = choices[0 if step.candidate is None else step.candidate + 1]
            event, changes = step.event, step.changes
            steps.append(step)
        else:
            proposal = propose(None, None)
            choice, event = sampled[0], proposal.event
            verdict = session.record([event])
            changes = verdict["events"][0].get("changes") or []
        for change in changes:  # a verdict reached, or a violation found (violated)
            log(f"studio: {change_words(change)}")

        messages.append(as_message(choice))
        output = event["output"]
        if not isinstance(output, dict):  # the final answer
            answer = output
            log(f"assistant: {answer}")
            break
        log(f"tool call: {output['tool']}({json.dumps(output['args'])})")
        result = bank.run(output["tool"], output["args"])
        call_id = messages[-1]["tool_calls"][0]["id"]
        messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)})
        session.record([{"input": result, "data": {"tool_result": output["tool"],
                                                   "tool_call_id": call_id}}])

    end = session.end()
    for rule in end.get("rules", ()):
        log(f"studio: {end_words(rule)}")
    return {"messages": messages, "executed": bank.calls, "steps": steps, "stopped": stopped,
            "answer": answer, "end": end}


def model_client():
    """The real OpenAI client when the package and a key are there; else the stand-in."""
    if os.environ.get("OPENAI_API_KEY"):
        try:
            from openai import OpenAI
        except ImportError:
            pass
        else:
            return OpenAI(), os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    return StandInModel(), DEFAULT_MODEL


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--session", default=f"tool-loop-{uuid.uuid4().hex[:8]}",
                        help="the live session's id (default: a new one)")
    parser.add_argument("--samples", type=int, default=1,
                        help="answers sampled a turn; the extra ones are candidates")
    parser.add_argument("--no-guard", action="store_true",
                        help="only record the events; ask the guard nothing")
    args = parser.parse_args(argv)
    env = os.environ
    if "STUDIO_WORKSPACE" not in env or not (env.get("STUDIO_TOKEN")
                                             or env.get("STUDIO_WEBHOOK_SECRET")):
        parser.error("set STUDIO_WORKSPACE and STUDIO_TOKEN (or STUDIO_WEBHOOK_SECRET)")
    client = StudioClient(env.get("STUDIO_URL", "http://127.0.0.1:8000"),
                          env["STUDIO_WORKSPACE"], token=env.get("STUDIO_TOKEN"),
                          webhook_secret=env.get("STUDIO_WEBHOOK_SECRET"))
    llm, model = model_client()
    print(f"session {args.session}, model {model}")
    try:
        result = run(GuardedSession(client, args.session), llm, model=model,
                     guarded=not args.no_guard, samples=args.samples)
    except StudioError as exc:
        print(f"the studio refused: {exc}", file=sys.stderr)
        return 2
    print("tools that ran:", ", ".join(name for name, _ in result["executed"]) or "none")
    return 1 if result["stopped"] else 0


if __name__ == "__main__":
    sys.exit(main())
