"""Messages between the lifelines of a multi-agent OpenTelemetry session.  Pure: no Django.

Several agents or services in one trace make a multi-agent session (a message sequence chart):
a span's lifeline is its agent (``gen_ai.agent.name``) or its service (``service.name``), and
every edge between spans of two different lifelines of one session becomes a message - a parent
span and its child (the call: the parent sends, the child receives) and a span link (the linked
span sends, the linking span receives).  A message is two events of its own, a send on the
source's lifeline and a receive on the target's, matched by the id ``call:<parent>><child>`` or
``link:<linked>><linking>``.  The receive is stamped one microsecond before the span it starts
and the send one microsecond before that (kept within the source span's lifetime), so the time
order puts each where it happened on its lifeline.  A :class:`MessageLinker` remembers the spans
it has seen (ids, lifeline, times: not their content), so an edge whose two spans arrive in
different documents - one export request per line in a Collector file, one ``resourceSpans``
entry at a time - is still found, when the second of them arrives; the file importer keeps one
linker per file, live ingestion one per request.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

_MESSAGE_LEAD_NANOS = 1_000


def iso_time(nanos: int) -> str:
    """An OTLP time (nanoseconds since the epoch) as ISO 8601 in UTC, to the microsecond."""
    seconds, rest = divmod(nanos, 1_000_000_000)
    moment = datetime.fromtimestamp(seconds, tz=UTC).replace(microsecond=rest // 1000)
    return moment.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class SeenSpan:
    """What the linker keeps of a span: enough to place a message, none of its content."""

    session: str
    lifeline: str
    trace_id: str
    span_id: str
    start: int | None
    end: int | None

    @property
    def key(self) -> tuple[str, str]:
        return (self.trace_id, self.span_id)


@dataclass(frozen=True)
class MessageEdge:
    """A message from the span ``source`` to the span ``target`` on another lifeline."""

    relation: str          # "call" (parent to child) or "link" (linked span to linking span)
    source: SeenSpan
    target: SeenSpan

    @property
    def message_id(self) -> str:
        return f"{self.relation}:{self.source.span_id}>{self.target.span_id}"

    @property
    def receive_nanos(self) -> int | None:
        if not self.target.start:
            return None
        return max(0, self.target.start - _MESSAGE_LEAD_NANOS)

    @property
    def send_nanos(self) -> int | None:
        receive = self.receive_nanos
        if receive is None:
            return None
        send = max(0, receive - _MESSAGE_LEAD_NANOS)
        start, end = self.source.start, self.source.end
        if start:  # the send happens while the source span runs
            send = max(send, start)
            if end is not None and end >= start:
                send = min(send, end)
        return send

    def events(self) -> tuple[dict, dict]:
        """The send and the receive, as canonical events."""
        mid = self.message_id
        data = {"relation": self.relation, "trace_id": self.target.trace_id,
                "from_span_id": self.source.span_id, "to_span_id": self.target.span_id}
        if self.source.trace_id != self.target.trace_id:
            data["from_trace_id"] = self.source.trace_id
        send_at, receive_at = self.send_nanos, self.receive_nanos
        send = {"session": self.source.session, "step": None, "lifeline": self.source.lifeline,
                "timestamp": iso_time(send_at) if send_at is not None else None, "input": None,
                "output": None, "data": dict(data), "labels": None, "event_id": f"{mid}/send",
                "message": {"id": mid, "peer": self.target.lifeline, "kind": "send"}}
        receive = {"session": self.target.session, "step": None,
                   "lifeline": self.target.lifeline,
                   "timestamp": iso_time(receive_at) if receive_at is not None else None,
                   "input": None, "output": None, "data": data, "labels": None,
                   "event_id": f"{mid}/receive",
                   "message": {"id": mid, "peer": self.source.lifeline, "kind": "receive"}}
        return send, receive


class MessageLinker:
    """Finds the messages between lifelines among spans given in any order.

    ``add`` takes one span (with its parent's and its links' ids) and returns the edges it
    completes: those to a parent or linked span seen before, and those from spans seen before
    that named it as their parent or link.  Each span is taken once (a repeated id adds
    nothing).  Memory grows with the number of spans, a few ids and numbers each."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], SeenSpan] = {}
        # Spans waiting for their source to arrive: source key -> [(relation, target)].
        self._waiting: dict[tuple[str, str], list[tuple[str, SeenSpan]]] = {}

    def add(self, span: SeenSpan, parent: tuple[str, str] | None,
            links: list[tuple[str, str]]) -> list[MessageEdge]:
        if span.key in self._seen:
            return []
        self._seen[span.key] = span
        edges: list[MessageEdge] = []
        sources = ([("call", parent)] if parent is not None else []) + [
            ("link", link) for link in links]
        for relation, source_key in sources:
            source = self._seen.get(source_key)
            if source is None:
                self._waiting.setdefault(source_key, []).append((relation, span))
            elif _crosses(source, span):
                edges.append(MessageEdge(relation, source, span))
        for relation, target in self._waiting.pop(span.key, ()):
            if _crosses(span, target):
                edges.append(MessageEdge(relation, span, target))
        return edges


def _crosses(source: SeenSpan, target: SeenSpan) -> bool:
    """An edge is a message when it joins two lifelines of one session (a message between
    sessions would be a receive without its send in each)."""
    return (source.session == target.session and bool(source.lifeline)
            and bool(target.lifeline) and source.lifeline != target.lifeline)
