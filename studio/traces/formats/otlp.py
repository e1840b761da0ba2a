"""OTLP/HTTP JSON traces to canonical events.  Pure: no Django.

The document is an ``ExportTraceServiceRequest`` (or a ``TracesData``, the same shape) in the
OTLP JSON encoding: proto3's JSON mapping with OTLP's deviations -

- ``traceId`` and ``spanId`` (and ``parentSpanId``) are hex strings, not base64;
- keys are lowerCamelCase only (``trace_id`` is an unknown field, like any other);
- enums are integers only (``"kind": 2``, never ``"SPAN_KIND_SERVER"``);
- 64-bit integers (``startTimeUnixNano``, ``intValue``) are decimal strings, numbers accepted;
- unknown fields are ignored.

``resourceSpans -> scopeSpans -> spans``: every span becomes one event, read through the GenAI
semantic conventions (``gen_ai.*``) and OpenInference (``openinference.span.kind``, ``tool.name``,
``input.value``, ``llm.*``).  A tool execution (``gen_ai.operation.name = execute_tool``, an
OpenInference TOOL span, or any span naming ``gen_ai.tool.name``) becomes the output
``{"tool": name, "args": {...}}``, which the built-in labeler reads as ``tool_call:NAME``.  Tool
calls a model only *requested* (in its output messages) go to ``data.tool_calls``, not to the
output: the execute_tool span that follows is the call, and counting both would count it twice.

A trace keeps to one session: a span belongs to the session that any span of its trace names
(``gen_ai.conversation.id`` or ``session.id``, on the span or on its resource), the first one
named, not only to the one it names itself (OpenInference's ``using_session`` names it on the
LLM spans only; a manual tool span or the agent's root span names none).  A trace none of whose
spans names one is its own session, named by its trace id.  :class:`TraceSessions` keeps that
choice between documents (the file importer reads a file twice: first for the names, then for
the events; live ingestion asks the workspace's map, ``studio.live.otlp_sessions``, which also
moves spans stored before the naming span arrived).  A span naming another session than its
trace's first one stays with its trace, and the conflict is reported (``Decoded.conflicts``).

Events come out ordered by start time (document order among equal times).  A span that cannot be
read is rejected on its own, with an error naming its index and the reason; the others are kept.

Several agents or services in one trace make a multi-agent session (a message sequence chart):
each edge between spans of two lifelines becomes a message, found by ``otlp_messages``'s
:class:`MessageLinker` even when its two spans arrive in different documents.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from .otlp_messages import MessageLinker, SeenSpan, iso_time

_HEX = re.compile(r"[0-9a-fA-F]*")
_DIGITS = re.compile(r"-?[0-9]+")
# Guards against attribute trees built to exhaust the stack.
_MAX_DEPTH = 64
# A message is placed this long before the span it starts (and its send as long again before).

SPAN_KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer",
              5: "consumer"}
STATUS_CODES = {0: "unset", 1: "ok", 2: "error"}

# Attributes read into the event's input and output; they are not repeated in data.attributes.
_CONSUMED_PREFIXES = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.prompt",
                      "gen_ai.completion", "gen_ai.system_instructions",
                      "gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
                      "input.value", "output.value", "llm.input_messages",
                      "llm.output_messages", "tool.parameters")


class SpanError(ValueError):
    """One span that cannot be read."""


@dataclass
class Decoded:
    """What a document decodes to: the events, an error per rejected span (or per unreadable
    container), and how many spans were rejected (OTLP's ``rejectedSpans``)."""

    events: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rejected_spans: int = 0
    # Spans naming another session than their trace's (``TraceConflict``), each pair once.
    conflicts: list[TraceConflict] = field(default_factory=list)


@dataclass(frozen=True)
class TraceConflict:
    """A span of ``trace_id`` named ``other``, but the trace's spans go to ``session``."""

    trace_id: str
    session: str
    other: str

    def sentence(self) -> str:
        return (f"the spans of trace {self.trace_id} name two sessions, {self.session!r} "
                f"(named first: every span of the trace is kept there) and {self.other!r}; "
                "give every span of one trace the same session.id")


class TraceSessions:
    """The session of each trace's spans: the first session any of its spans names, else the
    trace id.

    ``known`` seeds it with traces decided before (a file's first pass; the workspace's map);
    ``lookup``, when given, is called once per document with the trace ids not known yet and
    returns those it knows (``{trace_id: session}``).  ``names`` keeps, per trace, the distinct
    sessions its spans named in the documents given here, in the order seen."""

    def __init__(self, known: dict[str, str] | None = None, lookup=None) -> None:
        self.chosen: dict[str, str] = dict(known or {})
        self.names: dict[str, list[str]] = {}
        self._lookup = lookup
        self._reported: set[tuple[str, str]] = set()

    def learn(self, trace_ids: set[str]) -> None:
        missing = {t for t in trace_ids if t not in self.chosen}
        if self._lookup is not None and missing:
            self.chosen.update({t: s for t, s in self._lookup(missing).items() if t in missing})

    def name(self, trace_id: str, named: str) -> TraceConflict | None:
        """A span of ``trace_id`` names ``named``: the conflict it makes, the first time."""
        seen = self.names.setdefault(trace_id, [])
        if named not in seen:
            seen.append(named)
        first = self.chosen.setdefault(trace_id, named)
        if first == named or (trace_id, named) in self._reported:
            return None
        self._reported.add((trace_id, named))
        return TraceConflict(trace_id, first, named)

    def session_of(self, trace_id: str) -> str:
        return self.chosen.get(trace_id, trace_id)


def named_sessions(document: Any, sessions: TraceSessions) -> None:
    """Tell ``sessions`` the sessions the spans of ``document`` name, in document order, and
    nothing else: a file's first pass.  Spans that cannot be read are left to the second."""
    if not isinstance(document, dict) or not isinstance(document.get("resourceSpans"), list):
        return
    for _, resource, _, span in _walk(document["resourceSpans"], Decoded()):
        if not isinstance(span, dict):
            continue
        try:
            trace_id = _hex_id(span.get("traceId"), "traceId", 16, True)
            named = _named_session(_attributes(span.get("attributes")), resource)
        except SpanError:
            continue
        if named is not None:
            sessions.name(trace_id, named)


def events_from_otlp(document: dict, linker: MessageLinker | None = None,
                     sessions: TraceSessions | None = None) -> tuple[list[dict], list[str]]:
    """Canonical events of every readable span (and of the messages between lifelines), and an
    error for each span that is not, or that names another session than its trace's.  Pass
    one ``linker`` (and one ``sessions``) to successive calls to find messages between spans of
    different documents (and keep each trace in one session)."""
    decoded = decode_traces(document, linker, sessions)
    return decoded.events, [*decoded.errors, *(c.sentence() for c in decoded.conflicts)]


def decode_traces(document: Any, linker: MessageLinker | None = None,
                  sessions: TraceSessions | None = None) -> Decoded:
    """The document's events (see the module's doc).  Pass one ``sessions`` to successive calls
    to keep a trace's spans in one session across documents."""
    out = Decoded()
    if not isinstance(document, dict):
        out.errors.append(f"the document must be a JSON object, got {_kind(document)}")
        return out
    resource_spans = document.get("resourceSpans", [])
    if not isinstance(resource_spans, list):
        out.errors.append(f"resourceSpans must be an array, got {_kind(resource_spans)}")
        return out
    # Sort keys (time, anchor, place): a span is (start, its index, 0); a message's receive sits
    # just before the span it starts and its send just after the span that sends it.
    timed: list[tuple[tuple[int, int, int], dict]] = []
    decoded_spans: list[tuple[int, _Span]] = []
    # Spans are numbered across the whole document, from 0.
    for index, (where, resource, scope, span) in enumerate(_walk(resource_spans, out)):
        try:
            decoded = _event(span, resource, scope)
        except SpanError as exc:
            out.errors.append(f"span {index} ({where}): {exc}")
            out.rejected_spans += 1
        else:
            decoded_spans.append((index, decoded))
    # Each span's session: its trace's, decided before any message is linked (a message joins
    # two spans of one session).
    sessions = sessions if sessions is not None else TraceSessions()
    sessions.learn({d.seen.trace_id for _, d in decoded_spans})
    for _, decoded in decoded_spans:
        if decoded.named is not None:
            conflict = sessions.name(decoded.seen.trace_id, decoded.named)
            if conflict is not None:
                out.conflicts.append(conflict)
    for index, decoded in decoded_spans:
        session = sessions.session_of(decoded.seen.trace_id)
        decoded.event["session"] = session
        decoded.seen = replace(decoded.seen, session=session)
        timed.append(((decoded.start or 0, index, 0), decoded.event))
    linker = linker if linker is not None else MessageLinker()
    anchors = {(d.seen.trace_id, d.seen.span_id): index for index, d in decoded_spans}
    for _, decoded in decoded_spans:
        for edge in linker.add(decoded.seen, decoded.parent, decoded.links):
            send, receive = edge.events()
            # Without the target's start time, the send still follows its own span.
            sent = edge.send_nanos if edge.send_nanos is not None else edge.source.start or 0
            timed.append(((sent, anchors.get(edge.source.key, -1), 1), send))
            timed.append(((edge.receive_nanos or 0, anchors.get(edge.target.key, -1), -1),
                          receive))
    timed.sort(key=lambda t: t[0])
    out.events = [event for _, event in timed]
    return out


def _walk(resource_spans: list, out: Decoded) -> Iterator[tuple[str, dict, dict, Any]]:
    """``(where, resource attributes, scope, span)`` for every span; containers that cannot be
    read are reported (and their spans, when they can be counted, rejected)."""
    for i, rs in enumerate(resource_spans):
        where = f"resourceSpans[{i}]"
        if not isinstance(rs, dict):
            out.errors.append(f"{where} must be an object, got {_kind(rs)}")
            continue
        resource = rs.get("resource") or {}
        try:
            if not isinstance(resource, dict):
                raise SpanError(f"must be an object, got {_kind(resource)}")
            resource_attrs = _attributes(resource.get("attributes"))
        except SpanError as exc:
            lost = _count_spans(rs)
            out.errors.append(f"{where}.resource: {exc}; its {lost} span(s) are rejected")
            out.rejected_spans += lost
            continue
        scope_spans = rs.get("scopeSpans", [])
        if not isinstance(scope_spans, list):
            out.errors.append(f"{where}.scopeSpans must be an array, got {_kind(scope_spans)}")
            continue
        for j, ss in enumerate(scope_spans):
            swhere = f"{where}.scopeSpans[{j}]"
            if not isinstance(ss, dict):
                out.errors.append(f"{swhere} must be an object, got {_kind(ss)}")
                continue
            scope = ss.get("scope") or {}
            scope = scope if isinstance(scope, dict) else {}
            scope_info = {k: scope[k] for k in ("name", "version")
                          if isinstance(scope.get(k), str) and scope[k]}
            spans = ss.get("spans", [])
            if not isinstance(spans, list):
                out.errors.append(f"{swhere}.spans must be an array, got {_kind(spans)}")
                continue
            for k, span in enumerate(spans):
                yield f"{swhere}.spans[{k}]", resource_attrs, scope_info, span


def _count_spans(rs: dict) -> int:
    total = 0
    scope_spans = rs.get("scopeSpans")
    if isinstance(scope_spans, list):
        for ss in scope_spans:
            if isinstance(ss, dict) and isinstance(ss.get("spans"), list):
                total += len(ss["spans"])
    return total


# ---------------------------------------------------------------------------------------------
# Reading the protobuf JSON values

def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


def _hex_id(value: Any, name: str, size: int, required: bool) -> str | None:
    if value is None or value == "":
        if required:
            raise SpanError(f"{name} is required")
        return None
    if not isinstance(value, str) or len(value) != 2 * size or not _HEX.fullmatch(value):
        raise SpanError(f"{name} must be {2 * size} hex digits (OTLP/JSON encodes ids in hex, "
                        f"not base64), got {value!r}"[:300])
    if required and not value.strip("0"):
        raise SpanError(f"{name} must not be all zeros")
    return value.lower()


def _uint64(value: Any, name: str) -> int | None:
    """A fixed64: a decimal string (the encoding) or a JSON number (accepted)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise SpanError(f"{name} must be a whole number, got a boolean")
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer() or isinstance(value, str) and _DIGITS.fullmatch(value):
        number = int(value)
    else:
        raise SpanError(f"{name} must be a whole number (a decimal string), got {value!r}"[:300])
    if not 0 <= number < 2 ** 64:
        raise SpanError(f"{name} is out of range for a 64-bit unsigned integer")
    return number


def _enum(value: Any, name: str, names: dict[int, str]) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpanError(f"{name} must be an integer (OTLP/JSON encodes enums as integers), "
                        f"got {value!r}"[:300])
    return names.get(value, str(value))


def _any_value(value: Any, depth: int = 0) -> Any:
    """An AnyValue as plain JSON.  An empty AnyValue is null."""
    if depth > _MAX_DEPTH:
        raise SpanError("attribute values are nested too deeply")
    if not isinstance(value, dict):
        raise SpanError(f"an attribute value must be an object, got {_kind(value)}")
    if "stringValue" in value:
        text = value["stringValue"]
        if not isinstance(text, str):
            raise SpanError("stringValue must be a string")
        return text
    if "boolValue" in value:
        flag = value["boolValue"]
        if not isinstance(flag, bool):
            raise SpanError("boolValue must be true or false")
        return flag
    if "intValue" in value:
        raw = value["intValue"]
        if isinstance(raw, bool):
            raise SpanError("intValue must be a whole number")
        if isinstance(raw, int):
            number = raw
        elif isinstance(raw, str) and _DIGITS.fullmatch(raw) or isinstance(raw, float) and raw.is_integer():
            number = int(raw)
        else:
            raise SpanError(f"intValue must be a whole number, got {raw!r}"[:200])
        if not -2 ** 63 <= number < 2 ** 63:
            raise SpanError("intValue is out of range for a 64-bit integer")
        return number
    if "doubleValue" in value:
        raw = value["doubleValue"]
        if isinstance(raw, bool):
            raise SpanError("doubleValue must be a number")
        if isinstance(raw, (int, float)):
            number = float(raw)
        elif raw in ("NaN", "Infinity", "-Infinity"):
            return raw  # JSON columns hold no non-finite numbers: kept as the spec spells them
        else:
            raise SpanError(f"doubleValue must be a number, got {raw!r}"[:200])
        return number if math.isfinite(number) else str(raw)
    if "arrayValue" in value:
        array = value["arrayValue"] or {}
        items = array.get("values", []) if isinstance(array, dict) else None
        if not isinstance(items, list):
            raise SpanError("arrayValue.values must be an array")
        return [_any_value(v, depth + 1) for v in items]
    if "kvlistValue" in value:
        kvlist = value["kvlistValue"] or {}
        items = kvlist.get("values", []) if isinstance(kvlist, dict) else None
        if not isinstance(items, list):
            raise SpanError("kvlistValue.values must be an array")
        return _attributes(items, depth + 1)
    if "bytesValue" in value:
        raw = value["bytesValue"]
        if not isinstance(raw, str):
            raise SpanError("bytesValue must be a base64 string")
        return raw  # kept in its base64 text
    return None


def _attributes(items: Any, depth: int = 0) -> dict[str, Any]:
    """A KeyValue list as a flat dict (keys keep their dots)."""
    if items is None:
        return {}
    if not isinstance(items, list):
        raise SpanError(f"attributes must be an array, got {_kind(items)}")
    out: dict[str, Any] = {}
    for n, kv in enumerate(items):
        if not isinstance(kv, dict):
            raise SpanError(f"attribute {n} must be an object, got {_kind(kv)}")
        key = kv.get("key")
        if not isinstance(key, str) or not key:
            raise SpanError(f"attribute {n} needs a non-empty string key")
        try:
            out[key] = _any_value(kv.get("value", {}), depth)
        except SpanError as exc:
            raise SpanError(f"attribute {key!r}: {exc}") from None
    return out


# ---------------------------------------------------------------------------------------------
# From a span to a canonical event

@dataclass
class _Span:
    """One decoded span: its event, and what the linker needs to find its messages."""

    start: int | None
    event: dict
    seen: SeenSpan
    parent: tuple[str, str] | None
    links: list[tuple[str, str]]
    named: str | None = None  # the session the span names itself, if it names one


def _named_session(attrs: dict, resource: dict) -> str | None:
    """The session a span names: its own attribute, else its resource's."""
    for source in (attrs, resource):
        for key in ("gen_ai.conversation.id", "session.id"):
            value = source.get(key)
            if value is not None and value != "" and not isinstance(value, (dict, list)):
                return str(value)
    return None


def _event(span: Any, resource: dict, scope: dict) -> _Span:
    if not isinstance(span, dict):
        raise SpanError(f"must be an object, got {_kind(span)}")
    trace_id = _hex_id(span.get("traceId"), "traceId", 16, True)
    span_id = _hex_id(span.get("spanId"), "spanId", 8, True)
    parent = _hex_id(span.get("parentSpanId"), "parentSpanId", 8, False)
    links = _links(span.get("links"))
    start = _uint64(span.get("startTimeUnixNano"), "startTimeUnixNano")
    end = _uint64(span.get("endTimeUnixNano"), "endTimeUnixNano")
    kind = _enum(span.get("kind"), "kind", SPAN_KINDS)
    status = span.get("status") or {}
    if not isinstance(status, dict):
        raise SpanError(f"status must be an object, got {_kind(status)}")
    status_code = _enum(status.get("code"), "status.code", STATUS_CODES)
    name = span.get("name", "")
    if not isinstance(name, str):
        raise SpanError(f"name must be a string, got {_kind(name)}")
    attrs = _attributes(span.get("attributes"))
    span_events = _span_events(span.get("events"))

    def attr(*keys: str) -> Any:
        for key in keys:
            value = attrs.get(key)
            if value is not None and value != "":
                return value
        return None

    named = _named_session(attrs, resource)
    session = named or trace_id  # until the trace's session is known (decode_traces)
    lifeline = attr("gen_ai.agent.name", "agent.name") or resource.get("service.name") or ""
    operation = attr("gen_ai.operation.name")
    oi_kind = attr("openinference.span.kind")
    oi_kind = oi_kind.upper() if isinstance(oi_kind, str) else None
    tool = attr("gen_ai.tool.name", "tool.name")

    data: dict[str, Any] = {"name": name, "trace_id": trace_id, "span_id": span_id}
    if parent:
        data["parent_span_id"] = parent
    if links:
        data["links"] = [{"trace_id": t, "span_id": i} for t, i in links]
    if kind is not None:
        data["kind"] = kind
    if status_code is not None:
        data["status"] = status_code
    if isinstance(status.get("message"), str) and status["message"]:
        data["status_message"] = status["message"]
    if start is not None and end is not None and end >= start:
        data["duration_ms"] = round((end - start) / 1e6, 3)
    if operation:
        data["operation"] = operation
    if oi_kind:
        data["span_kind"] = oi_kind
    model = attr("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
    if model is not None:
        data["model"] = model
    provider = attr("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
    if provider is not None:
        data["provider"] = provider
    finish = attr("gen_ai.response.finish_reasons")
    if isinstance(finish, str):
        finish = [finish]
    if isinstance(finish, list) and finish and isinstance(finish[0], str):
        data["stop_reason"] = finish[0]
        data["finish_reasons"] = finish
    if scope:
        data["scope"] = scope

    input_value: Any = None
    output_value: Any = None
    is_tool = operation == "execute_tool" or oi_kind == "TOOL" or (
        tool is not None and operation is None and oi_kind is None)
    if is_tool and tool is not None:
        args = _json_or_text(attr("gen_ai.tool.call.arguments", "tool.parameters"))
        if args is None:
            candidate = _value_with_mime(attrs, "input")
            args = candidate if isinstance(candidate, dict) else None
        output_value = {"tool": str(tool), "args": args if args is not None else {}}
        result = attr("gen_ai.tool.call.result")
        result = _json_or_text(result) if result is not None else _value_with_mime(attrs,
                                                                                     "output")
        if result is not None:
            data["tool_result"] = result
        call_id = attr("gen_ai.tool.call.id")
        if call_id is not None:
            data["tool_call_id"] = call_id
    else:
        input_value = _prompt(attrs, span_events)
        output_value, requested = _completion(attrs, span_events)
        if requested:
            data["tool_calls"] = requested
        if output_value is None and requested and "stop_reason" not in data:
            data["stop_reason"] = "tool_calls"
    usage = {k.rsplit(".", 1)[-1]: attrs[k] for k in (
        "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens") if k in attrs}
    for k, short in (("llm.token_count.prompt", "input_tokens"),
                     ("llm.token_count.completion", "output_tokens")):
        if k in attrs and short not in usage:
            usage[short] = attrs[k]
    if usage:
        data["usage"] = usage
    rest = {k: v for k, v in attrs.items() if not k.startswith(_CONSUMED_PREFIXES)}
    if rest:
        data["attributes"] = _nest(rest)
    if resource:
        data["resource"] = _nest(resource)
    if span_events:
        data["events"] = [{"name": e["name"], "time": e["time"]} for e in span_events]

    event = {"session": str(session), "step": None, "lifeline": str(lifeline),
             "timestamp": iso_time(start) if start else None,
             "input": input_value, "output": output_value, "data": data, "labels": None,
             "event_id": span_id, "message": None}
    seen = SeenSpan(session=event["session"], lifeline=event["lifeline"], trace_id=trace_id,
                    span_id=span_id, start=start or None, end=end)
    return _Span(start=start, event=event, seen=seen,
                 parent=(trace_id, parent) if parent else None, links=links, named=named)


def _links(items: Any) -> list[tuple[str, str]]:
    """The (trace id, span id) of each span link."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise SpanError(f"links must be an array, got {_kind(items)}")
    out = []
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            raise SpanError(f"links[{n}] must be an object, got {_kind(item)}")
        out.append((_hex_id(item.get("traceId"), f"links[{n}].traceId", 16, True),
                    _hex_id(item.get("spanId"), f"links[{n}].spanId", 8, True)))
    return out


def _span_events(items: Any) -> list[dict]:
    if items is None:
        return []
    if not isinstance(items, list):
        raise SpanError(f"events must be an array, got {_kind(items)}")
    out = []
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            raise SpanError(f"events[{n}] must be an object, got {_kind(item)}")
        time = _uint64(item.get("timeUnixNano"), f"events[{n}].timeUnixNano")
        name = item.get("name", "")
        if not isinstance(name, str):
            raise SpanError(f"events[{n}].name must be a string")
        try:
            attrs = _attributes(item.get("attributes"))
        except SpanError as exc:
            raise SpanError(f"events[{n}]: {exc}") from None
        out.append({"name": name, "time": iso_time(time) if time else None, "attributes": attrs})
    return out


def _json_or_text(value: Any) -> Any:
    """Attribute values that hold JSON as text (arguments, messages) parsed; others as they are."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[", '"'):
            try:
                return json.loads(stripped)
            except (ValueError, RecursionError):
                return value
    return value


def _value_with_mime(attrs: dict, prefix: str) -> Any:
    """OpenInference ``input.value`` / ``output.value``, parsed when its mime type is JSON."""
    value = attrs.get(f"{prefix}.value")
    if value is None:
        return None
    mime = attrs.get(f"{prefix}.mime_type")
    if mime == "application/json" or (mime is None and isinstance(value, str)
                                      and value.strip()[:1] in ("{", "[")):
        return _json_or_text(value)
    return value


def _text_of(message: Any) -> str | None:
    """The text of one chat message, in any of the conventions' shapes."""
    if isinstance(message, str):
        return message
    if not isinstance(message, dict):
        return None
    inner = message.get("message")
    if isinstance(inner, dict):  # OpenInference: {"message": {"role", "content"}}
        return _text_of(inner)
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = message.get("parts", content if isinstance(content, list) else None)
    if isinstance(parts, list):  # GenAI: {"role", "parts": [{"type": "text", "content"}]}
        texts = []
        for part in parts:
            if isinstance(part, dict):
                text = part.get("content", part.get("text"))
                if part.get("type", "text") == "text" and isinstance(text, str):
                    texts.append(text)
            elif isinstance(part, str):
                texts.append(part)
        return "\n".join(texts) if texts else None
    return None


def _indexed(attrs: dict, prefix: str) -> list[dict]:
    """OpenInference's flattened lists (``llm.input_messages.0.message.role``) rebuilt."""
    found: dict[int, dict] = {}
    start = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(start):
            continue
        index, _, rest = key[len(start):].partition(".")
        if not index.isdigit() or not rest:
            continue
        node = found.setdefault(int(index), {})
        *path, last = rest.split(".")
        for part in path:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = node[part] = {}
            node = nxt
        node[last] = value
    return [found[i] for i in sorted(found)]


def _messages(attrs: dict, genai_key: str, oi_prefix: str) -> list:
    messages = _json_or_text(attrs.get(genai_key))
    if isinstance(messages, list) and messages:
        return messages
    return _indexed(attrs, oi_prefix)


def _prompt(attrs: dict, span_events: list[dict]) -> Any:
    messages = _messages(attrs, "gen_ai.input.messages", "llm.input_messages")
    if messages:
        return _text_of(messages[-1])
    legacy = _indexed(attrs, "gen_ai.prompt")  # gen_ai.prompt.0.content (OpenLLMetry)
    if legacy:
        return _text_of(legacy[-1])
    value = attrs.get("gen_ai.prompt")
    if value is None:
        value = _value_with_mime(attrs, "input")
    if value is None:
        for e in span_events:  # older GenAI conventions: a gen_ai.content.prompt event
            if e["name"] == "gen_ai.content.prompt" and "gen_ai.prompt" in e["attributes"]:
                value = e["attributes"]["gen_ai.prompt"]
    return value


def _completion(attrs: dict, span_events: list[dict]) -> tuple[Any, list[dict]]:
    """The completion's text and the tool calls the model requested."""
    messages = _messages(attrs, "gen_ai.output.messages", "llm.output_messages")
    if not messages:
        messages = _indexed(attrs, "gen_ai.completion")
    requested: list[dict] = []
    if messages:
        first = messages[0]
        requested = _requested_calls(first)
        return _text_of(first), requested
    value = attrs.get("gen_ai.completion")
    if value is None:
        value = _value_with_mime(attrs, "output")
    if value is None:
        for e in span_events:
            if e["name"] == "gen_ai.content.completion" and "gen_ai.completion" in e["attributes"]:
                value = e["attributes"]["gen_ai.completion"]
    return value, requested


def _requested_calls(message: Any) -> list[dict]:
    if not isinstance(message, dict):
        return []
    if isinstance(message.get("message"), dict):
        message = message["message"]
    calls = []
    for part in message.get("parts") or []:  # GenAI: {"type": "tool_call", "name", "arguments"}
        if isinstance(part, dict) and part.get("type") == "tool_call":
            calls.append({"id": part.get("id"), "name": part.get("name"),
                          "arguments": _json_or_text(part.get("arguments"))})
    raw = message.get("tool_calls")  # OpenInference: tool_calls.N.tool_call.function.name
    if isinstance(raw, dict):
        raw = [raw[k] for k in sorted(raw, key=lambda k: int(k) if k.isdigit() else 0)]
    for item in raw if isinstance(raw, list) else []:
        call = item.get("tool_call", item) if isinstance(item, dict) else None
        if not isinstance(call, dict):
            continue
        fn = call.get("function") if isinstance(call.get("function"), dict) else call
        calls.append({"id": call.get("id"), "name": fn.get("name"),
                      "arguments": _json_or_text(fn.get("arguments"))})
    return calls


def _nest(flat: dict[str, Any]) -> dict:
    """Dotted attribute keys as nested objects, so rules read them as paths
    (``data.attributes.http.response.status_code``).  A key that is both a value and a prefix
    of others keeps its value under ``""``."""
    out: dict = {}
    for key in sorted(flat):
        node = out
        *path, last = key.split(".")
        for part in path:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = node[part] = {} if nxt is None else {"": nxt}
            node = nxt
        if isinstance(node.get(last), dict):
            node[last][""] = flat[key]
        else:
            node[last] = flat[key]
    return out
