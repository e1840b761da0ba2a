"""Chat messages to events, shared by the OpenAI transcript and Inspect AI importers.

Each assistant message becomes an event - one per tool call when it calls tools, with output
``{"tool": name, "args": {...}}``; otherwise its text.  The event's input is what the assistant
saw since its previous message, one ``[role] content`` line per message (``[tool:NAME] result``
for tool results).  ``data`` carries ``role`` and ``stop_reason`` so the built-in atoms
``role:R`` and ``stop_reason:R`` work.  Steps number the events of one transcript from 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import MAX_NAME_LENGTH, LineError, json_kind, loads, make_event

NON_TEXT_PARTS = {"image": "[image]", "image_url": "[image]", "input_image": "[image]",
                  "audio": "[audio]", "input_audio": "[audio]", "video": "[video]",
                  "file": "[file]"}


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts (text parts joined by
    newlines, other media as a placeholder such as ``[image]``; reasoning is left out)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict):
                kind = part.get("type")
                if isinstance(part.get("text"), str):
                    pieces.append(part["text"])
                elif isinstance(part.get("refusal"), str):
                    pieces.append(part["refusal"])
                elif kind in NON_TEXT_PARTS:
                    pieces.append(NON_TEXT_PARTS[kind])
        return "\n".join(pieces)
    return str(content)


def tool_call(call: Any) -> tuple[str, Any, str | None, str | None]:
    """(name, parsed arguments, call id, problem) for an OpenAI-style tool call
    ``{"id", "function": {"name", "arguments": "<json>"}}`` or an Inspect one
    ``{"id", "function": name, "arguments": {...}}``."""
    if not isinstance(call, dict):
        return "", None, None, f"a tool call must be an object, got {json_kind(call)}"
    function = call.get("function")
    if isinstance(function, dict):
        name, raw = function.get("name"), function.get("arguments")
    else:
        name = function if isinstance(function, str) else call.get("name")
        raw = call.get("arguments", call.get("args"))
    call_id = call.get("id") if isinstance(call.get("id"), str) else None
    if not isinstance(name, str) or not name:
        return "", None, call_id, "the tool call has no function name"
    if call.get("parse_error"):
        return name, None, call_id, (f"tool call {name!r}: its arguments could not be parsed "
                                     f"({str(call['parse_error'])[:200]})")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return name, {}, call_id, None
    if isinstance(raw, str):
        try:
            return name, loads(raw), call_id, None
        except ValueError as exc:
            detail = getattr(exc, "msg", str(exc))
            column = getattr(exc, "colno", None)
            where = f" at column {column}" if column else ""
            return name, None, call_id, (f"tool call {name!r}: arguments are not valid JSON "
                                         f"({detail}{where})")
        except RecursionError:
            return name, None, call_id, f"tool call {name!r}: arguments are nested too deeply"
    return name, raw, call_id, None


class Transcript:
    """Feeds one session's messages in order and collects its events and errors."""

    def __init__(self, session: str, *, line: int, pointer: str = "", data: dict | None = None,
                 text_output: Callable[[str], Any] = lambda text: text,
                 message_info: Callable[[dict], tuple[str | None, str | None]] | None = None,
                 resolve: Callable[[str], str] = lambda text: text):
        self.session = session
        self.line = line
        self.pointer = pointer
        self.data = data or {}
        self.text_output = text_output
        # (timestamp, stop_reason) the log keeps elsewhere for a message (Inspect's model events)
        self.message_info = message_info
        self.resolve = resolve
        self.items: list[dict | LineError] = []
        self.step = 0
        self.assistants = 0
        self._seen: list[str] = []                 # input lines since the last assistant message
        self._tool_names: dict[str, str] = {}      # tool call id -> function name

    def error(self, index: int | None, reason: str, suffix: str = "") -> None:
        where = f"{self.pointer}/messages/{index}{suffix}" if index is not None else self.pointer
        self.items.append(LineError(self.line, reason, where))

    def add(self, index: int, message: Any, line: int | None = None) -> None:
        if line is not None:
            self.line = line
        if not isinstance(message, dict):
            self.error(index, f"message {index} must be an object, got {json_kind(message)}")
            return
        role = message.get("role")
        if not isinstance(role, str) or not role:
            self.error(index, f"message {index} has no role")
            return
        if role != "assistant":
            self._seen.append(self._render(role, message))
            return
        self.assistants += 1
        self._assistant(index, message)
        self._seen = []

    def _render(self, role: str, message: dict) -> str:
        text = self.resolve(content_text(message.get("content")))
        if role == "tool" or role == "function":
            call_id = message.get("tool_call_id")
            name = message.get("function") or message.get("name") or (
                self._tool_names.get(call_id, "") if isinstance(call_id, str) else "")
            return f"[tool:{name}] {text}" if name else f"[tool] {text}"
        return f"[{role}] {text}"

    def _assistant(self, index: int, message: dict) -> None:
        input_text = "\n".join(self._seen) if self._seen else None
        timestamp, stop_reason = (self.message_info(message) if self.message_info
                                  else (None, None))
        stop_reason = message.get("stop_reason") or message.get("finish_reason") or stop_reason
        data = dict(self.data)
        data["role"] = "assistant"
        if isinstance(stop_reason, str) and stop_reason:
            data["stop_reason"] = stop_reason
        data["message_index"] = index
        lifeline = message.get("name") if isinstance(message.get("name"), str) else ""
        lifeline = lifeline[:MAX_NAME_LENGTH]
        calls = message.get("tool_calls")
        if calls is None and isinstance(message.get("function_call"), dict):
            calls = [{"function": message["function_call"]}]  # the legacy single call
        if calls is not None and not isinstance(calls, list):
            self.error(index, f"message {index}: 'tool_calls' must be a list, got "
                              f"{json_kind(calls)}", "/tool_calls")
            return
        if not calls:
            text = self.resolve(content_text(message.get("content")))
            self._event(input_text, self.text_output(text), data, lifeline, timestamp)
            return
        for position, call in enumerate(calls):
            name, args, call_id, problem = tool_call(call)
            if call_id and name:
                self._tool_names[call_id] = name
            if problem:
                self.error(index, f"message {index}: {problem}", f"/tool_calls/{position}")
                self.step += 1  # the step stays the call's: later steps do not shift
                continue
            call_data = dict(data)
            if call_id:
                call_data["tool_call_id"] = call_id
            self._event(input_text, {"tool": name, "args": self._resolve_args(args)}, call_data,
                        lifeline, timestamp)

    def _resolve_args(self, args: Any) -> Any:
        if isinstance(args, dict):
            return {k: self.resolve(v) if isinstance(v, str) else v for k, v in args.items()}
        return args

    def _event(self, input_text, output, data, lifeline, timestamp) -> None:
        self.items.append(make_event(self.session, self.step, self.line, lifeline=lifeline,
                                     timestamp=timestamp, input=input_text, output=output,
                                     data=data))
        self.step += 1

    def finish(self) -> list[dict | LineError]:
        if self.assistants == 0 and not any(isinstance(i, LineError) for i in self.items):
            self.error(None, f"session {self.session!r} has no assistant message: no event to "
                             "import")
        items, self.items = self.items, []
        return items
