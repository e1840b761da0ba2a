"""Message sequence charts (paper 001, definition 1) built from canonical events.

``build_msc(events)`` takes the canonical event dicts of one session, in log order, and returns an
:class:`Msc`, or raises :class:`MscError` naming the first offending event (``index`` in the
input, its ``step``, ``lifeline`` and ``message_id``); ``MscError.problems`` lists every problem
found.

How an event dict is read:

* ``lifeline`` (required, non-empty);
* a message either nested, ``"message": {"id", "peer", "kind": "send" | "receive"}`` (what the
  JSONL importer produces), or flat, ``message_id`` / ``message_peer`` / ``message_kind`` (the
  database row); ``peer`` is the intended receiver of a send and the sender of a receive;
* a *choice* event has ``data["choice"]``: the name of the guard it evaluates (or a list of
  names); a choice event carries no message;
* every other event is a *local* action;
* ``data`` updates the lifeline's store: the valuation of an event (definition 1's ``val``) is the
  store after it, i.e. the lifeline's earlier ``data`` overlaid with this event's;
* ``step`` and ``timestamp`` are optional; where given they must not go backwards along a
  lifeline, and steps must be unique in the session.

The order of a lifeline's events is their order in the input (the local successor relation);
sends and receives are matched by message id.  A receive without its send, two sends or two
receives of one message, a peer that contradicts the matched event, and a causal cycle (the local
and message edges are not acyclic, definition 1 (iv)) are errors.  A send without a receive is a
message in transit (``Msc.in_transit``).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

LOCAL, SEND, RECEIVE, CHOICE = "local", "send", "receive", "choice"
CHOICE_KEY = "choice"


class MscError(ValueError):
    """An event sequence that is not an MSC.  ``index`` is the offending event's position in the
    input (None for problems of the whole input); ``problems`` holds every problem found, the
    first of which is this error."""

    def __init__(self, message: str, index: int | None = None, *, step: Any = None,
                 lifeline: str | None = None, message_id: str | None = None):
        self.message = message
        self.index = index
        self.step = step
        self.lifeline = lifeline
        self.message_id = message_id
        self.problems: list[MscError] = [self]
        super().__init__(self.describe())

    def describe(self) -> str:
        if self.index is None:
            return self.message
        where = [f"event {self.index}"]
        if self.step is not None:
            where.append(f"step {self.step}")
        if self.lifeline:
            where.append(f"lifeline {self.lifeline!r}")
        if self.message_id:
            where.append(f"message {self.message_id!r}")
        return f"{where[0]} ({', '.join(where[1:])}): {self.message}" if len(where) > 1 else (
            f"{where[0]}: {self.message}")


@dataclass
class MscEvent:
    index: int                  # position in the input (the log order of the file)
    lifeline: str
    position: int               # 1-based position on its lifeline
    kind: str                   # local | send | receive | choice
    message_id: str | None
    peer: str | None            # receiver of a send, sender of a receive (as logged)
    partner: int | None         # the matching receive of a send / send of a receive
    guards: tuple[str, ...]     # the guards a choice event evaluates
    data: dict                  # the event's own data
    valuation: dict             # the lifeline's store after this event
    step: Any = None
    timestamp: Any = None
    source: Mapping | None = field(default=None, repr=False)

    def describe(self) -> str:
        text = f"event {self.index} on {self.lifeline} ({self.kind}"
        if self.message_id is not None:
            text += f" {self.message_id}"
        if self.guards:
            text += " " + ",".join(self.guards)
        return text + ")"


class Msc:
    """An MSC: events on lifelines, the local order, matched messages, valuations.

    ``lifelines`` are in order of first appearance (unless given); vector clocks are tuples
    indexed like it.  All derived structure (clocks, causal pasts, linearisations) is computed
    once at construction.
    """

    def __init__(self, events: list[MscEvent], lifelines: tuple[str, ...],
                 linearisation: list[int], clocks: list[tuple[int, ...]],
                 log_order: list[int]):
        self.events = events
        self.lifelines = lifelines
        self.lifeline_index = {name: i for i, name in enumerate(lifelines)}
        self._linearisation = linearisation
        self._clocks = clocks
        self._log_order = log_order
        self.by_lifeline: dict[str, list[int]] = {name: [] for name in lifelines}
        for event in events:
            self.by_lifeline[event.lifeline].append(event.index)

    def __len__(self) -> int:
        return len(self.events)

    @property
    def in_transit(self) -> list[int]:
        """Sends whose message has not been received."""
        return [e.index for e in self.events if e.kind == SEND and e.partner is None]

    @property
    def choices(self) -> list[int]:
        return [e.index for e in self.events if e.kind == CHOICE]

    def vector_clock(self, index: int) -> tuple[int, ...]:
        """For each lifeline (``self.lifelines`` order), how many of its events are in the
        causal past of event ``index``, the event itself included."""
        return self._clocks[index]

    def causal_past(self, index: int) -> set[int]:
        """The events f with f <= e in the causal order (non-strict: e itself is in)."""
        clock = self._clocks[index]
        past: set[int] = set()
        for name, count in zip(self.lifelines, clock, strict=True):
            past.update(self.by_lifeline[name][:count])
        return past

    def happens_before(self, earlier: int, later: int) -> bool:
        """earlier <= later in the causal order."""
        event = self.events[earlier]
        return self._clocks[later][self.lifeline_index[event.lifeline]] >= event.position

    def latest_visible(self, index: int, lifeline: str) -> int | None:
        """The latest event of ``lifeline`` in the causal past of ``index`` (or None)."""
        b = self.lifeline_index.get(lifeline)
        if b is None:
            return None
        count = self._clocks[index][b]
        return self.by_lifeline[lifeline][count - 1] if count else None

    def linearisation(self) -> list[int]:
        """A linear extension of the causal order that follows the log order wherever causality
        allows (the log order itself whenever it is causally consistent)."""
        return list(self._linearisation)

    def log_order(self) -> list[int]:
        """The order of a sequential log: by timestamp when every event has one (ties keep the
        input order), otherwise the input order."""
        return list(self._log_order)

    def is_log_order_causal(self) -> bool:
        return self._linearisation == self._log_order


def causal_past(msc: Msc, event_index: int) -> set[int]:
    """The causal past of an event (non-strict): what the view highlights."""
    return msc.causal_past(event_index)


# --- reading events ------------------------------------------------------------------------

def _epoch_seconds(value: Any) -> float | None:
    """A timestamp as seconds since 1970, or raises ValueError."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"timestamp {value!r} is not a date")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"timestamp {value!r} is not a date")
        return float(value)
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        moment = datetime.fromisoformat(value.strip())
    else:
        raise ValueError(f"timestamp of type {type(value).__name__} is not a date")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def read_message(event: Mapping) -> tuple[str | None, str | None, str | None]:
    """(id, peer, kind) of an event's message, nested or flat; (None, None, None) without one."""
    message = event.get("message")
    if message:
        if not isinstance(message, Mapping):
            raise ValueError("field 'message' must be an object {id, peer, kind}")
        mid, peer, kind = message.get("id"), message.get("peer"), message.get("kind")
    else:
        mid, peer, kind = (event.get("message_id"), event.get("message_peer"),
                           event.get("message_kind"))
    if not mid and not kind:
        return None, None, None
    if not mid:
        raise ValueError("the message has no id")
    if kind not in (SEND, RECEIVE):
        raise ValueError(f"message kind must be 'send' or 'receive', got {kind!r}")
    return str(mid), (str(peer) if peer else None), kind


def read_guards(data: Mapping) -> tuple[str, ...]:
    names = data.get(CHOICE_KEY)
    if names is None:
        return ()
    if isinstance(names, str):
        names = [names]
    if (not isinstance(names, list) or not names
            or not all(isinstance(n, str) and n for n in names)):
        raise ValueError(f"data.{CHOICE_KEY} must name a guard (a string or a list of strings)")
    return tuple(names)


# --- construction ---------------------------------------------------------------------------

def build_msc(events: Iterable[Mapping], lifelines: Iterable[str] | None = None) -> Msc:
    """The MSC of one session's canonical events (see the module docstring).

    ``lifelines`` fixes the lifeline order (and may name lifelines without events); by default
    it is the order of first appearance."""
    problems: list[MscError] = []
    parsed: list[MscEvent] = []
    names: list[str] = list(lifelines) if lifelines is not None else []
    known = set(names)
    stores: dict[str, dict] = {}
    sessions: dict[Any, int] = {}
    steps_seen: dict[Any, int] = {}
    last_on_lifeline: dict[str, MscEvent] = {}
    stamps: dict[int, float | None] = {}

    for index, raw in enumerate(events):
        def problem(message: str, *, lifeline=None, message_id=None, _i=index, _raw=raw):
            step = _raw.get("step") if isinstance(_raw, Mapping) else None
            problems.append(MscError(message, _i, step=step, lifeline=lifeline,
                                     message_id=message_id))

        if not isinstance(raw, Mapping):
            problem(f"expected an event object, got {type(raw).__name__}")
            continue
        lifeline = raw.get("lifeline")
        if not isinstance(lifeline, str) or not lifeline:
            problem("the event has no lifeline")
            continue
        try:
            mid, peer, kind = read_message(raw)
        except ValueError as exc:
            problem(str(exc), lifeline=lifeline)
            continue
        data = raw.get("data")
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            problem("field 'data' must be an object", lifeline=lifeline, message_id=mid)
            continue
        try:
            guards = read_guards(data)
        except ValueError as exc:
            problem(str(exc), lifeline=lifeline, message_id=mid)
            continue
        if guards and kind is not None:
            problem("a choice event cannot also send or receive a message", lifeline=lifeline,
                    message_id=mid)
            continue
        try:
            stamp = _epoch_seconds(raw.get("timestamp"))
        except (ValueError, OverflowError, OSError) as exc:
            problem(f"bad timestamp: {exc}", lifeline=lifeline, message_id=mid)
            continue
        session = raw.get("session")
        if session is not None:
            sessions.setdefault(session, index)
        step = raw.get("step")
        if step is not None:
            if step in steps_seen:
                problem(f"step {step} is also the step of event {steps_seen[step]}",
                        lifeline=lifeline, message_id=mid)
                continue
            steps_seen[step] = index

        previous = last_on_lifeline.get(lifeline)
        if previous is not None:
            if step is not None and previous.step is not None and step < previous.step:
                problem(f"lifeline goes backwards: step {step} comes after step {previous.step} "
                        f"(event {previous.index}) on {lifeline!r}", lifeline=lifeline,
                        message_id=mid)
                continue
            previous_stamp = stamps[previous.index]
            if stamp is not None and previous_stamp is not None and stamp < previous_stamp:
                problem(f"lifeline goes backwards: timestamp {raw.get('timestamp')} is earlier "
                        f"than that of event {previous.index} ({previous.timestamp}) on "
                        f"{lifeline!r}", lifeline=lifeline, message_id=mid)
                continue

        if lifeline not in known:
            known.add(lifeline)
            names.append(lifeline)
        store = stores.setdefault(lifeline, {})
        store.update(data)
        event = MscEvent(index=index, lifeline=lifeline,
                         position=(previous.position + 1) if previous else 1,
                         kind=kind or (CHOICE if guards else LOCAL), message_id=mid, peer=peer,
                         partner=None, guards=guards, data=dict(data), valuation=dict(store),
                         step=step, timestamp=raw.get("timestamp"), source=raw)
        parsed.append(event)  # dense: any refused event means the MSC is never returned
        stamps[index] = stamp
        last_on_lifeline[lifeline] = event

    if len(sessions) > 1:
        first, second = sorted(sessions.values())[:2]
        problems.append(MscError("the events belong to several sessions (first difference at "
                                 f"event {second}; event {first} starts the first session)",
                                 second))
    if problems:
        _raise(problems)
    _match_messages(parsed, problems)
    if problems:
        _raise(problems)
    lifeline_names = tuple(names)
    log_order = _log_order(parsed, [stamps[e.index] for e in parsed])
    linearisation = _linearise(parsed, log_order, problems)
    if problems:
        _raise(problems)
    clocks = _vector_clocks(parsed, lifeline_names, linearisation)
    return Msc(parsed, lifeline_names, linearisation, clocks, log_order)


def _raise(problems: list[MscError]):
    problems.sort(key=lambda p: (p.index is None, p.index if p.index is not None else 0))
    first = problems[0]
    first.problems = problems
    if len(problems) > 1:
        first.args = (first.describe() + f" (and {len(problems) - 1} more problem"
                      f"{'s' if len(problems) > 2 else ''})",)
    raise first


def _match_messages(events: list[MscEvent], problems: list[MscError]) -> None:
    sends: dict[str, MscEvent] = {}
    receives: dict[str, MscEvent] = {}

    def problem(event: MscEvent, message: str):
        problems.append(MscError(message, event.index, step=event.step, lifeline=event.lifeline,
                                 message_id=event.message_id))

    for event in events:
        if event.kind == SEND:
            if event.message_id in sends:
                problem(event, f"message sent twice (first by event "
                               f"{sends[event.message_id].index})")
            else:
                sends[event.message_id] = event
        elif event.kind == RECEIVE:
            if event.message_id in receives:
                problem(event, f"message received twice (first by event "
                               f"{receives[event.message_id].index})")
            else:
                receives[event.message_id] = event
    for mid, receive in receives.items():
        send = sends.get(mid)
        if send is None:
            problem(receive, "receive without its send: no event sends this message")
            continue
        if send.peer is not None and send.peer != receive.lifeline:
            problem(receive, f"received on {receive.lifeline!r} but sent (event {send.index}) "
                             f"to {send.peer!r}")
            continue
        if receive.peer is not None and receive.peer != send.lifeline:
            problem(receive, f"receive names sender {receive.peer!r} but event {send.index} on "
                             f"{send.lifeline!r} sent it")
            continue
        send.partner = receive.index
        receive.partner = send.index


def _log_order(events: list[MscEvent], stamps: list[float | None]) -> list[int]:
    if events and all(s is not None for s in stamps):
        return sorted(range(len(events)), key=lambda i: (stamps[i], i))
    return list(range(len(events)))


def _predecessors(events: list[MscEvent]) -> list[list[int]]:
    """Immediate predecessors: the previous event on the lifeline and, for a receive, its send."""
    preds: list[list[int]] = [[] for _ in events]
    last: dict[str, int] = {}
    for event in events:
        before = last.get(event.lifeline)
        if before is not None:
            preds[event.index].append(before)
        if event.kind == RECEIVE and event.partner is not None:
            preds[event.index].append(event.partner)
        last[event.lifeline] = event.index
    return preds


def _linearise(events: list[MscEvent], log_order: list[int],
               problems: list[MscError]) -> list[int]:
    """Kahn's topological sort, always taking the ready event earliest in the log."""
    preds = _predecessors(events)
    succs: list[list[int]] = [[] for _ in events]
    waiting = [len(p) for p in preds]
    for i, ps in enumerate(preds):
        for p in ps:
            succs[p].append(i)
    rank = {i: r for r, i in enumerate(log_order)}
    ready = [(rank[i], i) for i in range(len(events)) if waiting[i] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        for j in succs[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, (rank[j], j))
    if len(order) < len(events):
        cycle = _find_cycle(events, preds, {i for i in range(len(events)) if waiting[i] > 0})
        start = min(cycle)
        rotated = cycle[cycle.index(start):] + cycle[:cycle.index(start)]
        path = " -> ".join(events[i].describe() for i in rotated + [start])
        event = events[start]
        problems.append(MscError(f"causal cycle: {path}", start, step=event.step,
                                 lifeline=event.lifeline, message_id=event.message_id))
    return order


def _find_cycle(events, preds, stuck: set[int]) -> list[int]:
    """A cycle among the events Kahn's algorithm could not order, in causal direction."""
    # Every stuck event has a stuck predecessor; walking predecessors must revisit one.
    start = min(stuck)
    seen: dict[int, int] = {}
    walk: list[int] = []
    node = start
    while node not in seen:
        seen[node] = len(walk)
        walk.append(node)
        node = next(p for p in preds[node] if p in stuck)
    backwards = walk[seen[node]:]
    return list(reversed(backwards))


def _vector_clocks(events: list[MscEvent], lifelines: tuple[str, ...],
                   order: list[int]) -> list[tuple[int, ...]]:
    index_of = {name: i for i, name in enumerate(lifelines)}
    clocks: list[tuple[int, ...]] = [()] * len(events)
    current = {name: (0,) * len(lifelines) for name in lifelines}
    for i in order:
        event = events[i]
        clock = list(current[event.lifeline])
        if event.kind == RECEIVE and event.partner is not None:
            clock = [max(a, b) for a, b in zip(clock, clocks[event.partner], strict=True)]
        clock[index_of[event.lifeline]] = event.position
        clocks[i] = current[event.lifeline] = tuple(clock)
    return clocks
