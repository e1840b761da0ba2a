"""Live monitoring: an agent's events in, verdict changes out, one session at a time.

``ingest`` stores a batch of events for one session and advances the session's monitors in one
transaction, holding the session's row lock, so deliveries to one session are monitored one after
the other, in the order they were stored (RELIABILITY 11).  An event id is unique per workspace
and source: a repeated delivery stores nothing and reports no verdict change again.

``check`` answers, for candidate next events, whether each would violate a rule and what would
remain to be done; it stores nothing.

The stored events are the truth: a session's monitors are, by definition, the replay of its
events in step order against the live rule versions.  What is kept besides is a cache of that
replay, at two levels:

* a snapshot in ``TraceSession.monitor_state``: the monitors' state after the events with a step
  below ``next_step`` (``steps`` of them), with the rule versions it was built for and the
  violations counted so far.  It is kept small - verdicts, residuals, open obligations, no
  witnesses - and saved when a session starts, when it is rebuilt, and then once every
  ``SNAPSHOT_EVERY`` events, not at every delivery;
* in each server process, the session's monitor as that process left it (``_Live``).

Either one is only used for what it is: the replay of the events below its ``next_step``, which
holds exactly when the session still has that many events there (the session's ``steps`` minus
the events from ``next_step`` on, read under the row lock).  It is then brought up to date by
monitoring the events stored after it - by other processes, or by an upload - in step order.
So whichever process takes which delivery, the answers are those of one monitor that saw every
event in order.  A snapshot for other rule versions (or none, or one that does not fit the
events) means the session is rebuilt from all its events (``rebuilt`` in the answer).
"""

from __future__ import annotations

import functools
import json
import math
import threading
import time
import uuid
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from django.conf import settings
from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from studio.caching import LruCache
from studio.errors import ServiceError
from studio.labeling import Labeling, labeling_from_snapshot
from studio.labeling.llm import LLMError
from studio.logic.invisible import describe, find_invisible
from studio.monitor import VIOLATED, FastSessionMonitor, RuleSet, SessionMonitor
from studio.monitor.anticipation import verdicts_now
from studio.monitor.verdicts import session_verdict
from studio.rules import monitoring
from studio.rules.models import RuleVersion
from studio.traces import vocabulary
from studio.traces.models import Event, TraceSession, monitor_event
from studio.workspaces.actions import LogAction
from studio.workspaces.models import Workspace

from . import causal_guards

SOURCE_LIVE = "live"
SOURCE_OTLP = "otlp"
STATE_FORMAT = 1

SESSION_ID_MAX = 300     # TraceSession.external_id
EVENT_ID_MAX = 200       # Event.event_id
LIFELINE_MAX = 200       # Event.lifeline
MESSAGE_FIELD_MAX = 200  # Event.message_id / message_peer
MAX_EVENTS_PER_BATCH = 10_000
_JSON_DEPTH_MAX = 100
_INSERT_ATTEMPTS = 3
SNAPSHOT_EVERY = 32  # events between two snapshots of a session's monitors (at most)

# The canonical event's fields; anything else an event carries is kept under ``data``.
_FIELDS = frozenset({"session", "step", "event_id", "lifeline", "timestamp", "input", "output",
                     "data", "labels", "message"})


# ---------------------------------------------------------------------------------------------
# In-process caches.  Compiled rule sets are shared by every session monitored against the same
# rule versions (their automata grow as they run); a session's monitor stays in memory after a
# delivery (``_Live``), so the next delivery to it in this process need not read the snapshot.
# The formula core interns formulas in a table that is not thread-safe, so all monitor work of
# the process runs under one lock (it is pure Python under the GIL: the lock costs no
# parallelism).

_MONITOR_LOCK = threading.RLock()
_CACHE_LOCK = threading.Lock()
_RULESETS_MAX = 64
_RULESETS: LruCache[tuple, RuleSet] = LruCache(_RULESETS_MAX)
_MONITORS_MAX = 2048
_MONITORS: LruCache[tuple[int, str], _Live] = LruCache(_MONITORS_MAX)
_LABELINGS_MAX = 256
_LABELINGS: LruCache[tuple, Labeling] = LruCache(_LABELINGS_MAX)


# A workspace's live context (its live rule versions and labeling) is read for
# settings.LIVE_CONTEXT_SECONDS before the two queries run again.  Saving or deleting a rule,
# version, rule set, labeler or workspace clears this process's entries (see apps.py); other
# server processes follow within the TTL, and a session whose saved state was made for other
# versions is rebuilt by replay, so results never mix rule versions.
_CONTEXTS: dict[int, tuple[float, Context]] = {}


def clear_caches() -> None:
    _RULESETS.clear()
    _MONITORS.clear()
    _LABELINGS.clear()
    with _CACHE_LOCK:
        _CONTEXTS.clear()
    causal_guards.clear()


def forget_contexts(**_signal) -> None:
    with _CACHE_LOCK:
        _CONTEXTS.clear()


def _cached_ruleset(versions: list[LiveVersion]) -> RuleSet:
    """The compiled rules (as ``studio.rules.monitoring.ruleset_for`` builds them)."""
    key = tuple((v.rule, v.id) for v in versions)
    found = _RULESETS.get(key)
    if found is not None:
        return found
    with _MONITOR_LOCK:
        built = RuleSet([(v.rule, v.formula, v.counting or None) for v in versions])
    _RULESETS.put(key, built)
    return built


@dataclass(eq=False)
class _Live:
    """A session's monitor: the replay of its events with a step below ``next_step`` (``steps``
    of them, the last one ``last``) against the rule versions ``versions``.  ``counts``: the
    violations per rule found before those the monitor still lists (``_counts``)."""

    pk: int
    versions: list
    monitor: FastSessionMonitor
    counts: dict[str, int]
    steps: int = 0
    next_step: int = 0
    last: dict | None = None


def _take_live(workspace_pk: int, external_id: str, context: Context) -> _Live | None:
    """The session's monitor as this process left it, for the live rule versions.  Taken out of
    the cache: the caller owns it until it puts it back (after commit); whether it still fits the
    stored events is for the caller to check (``_bring_up_to_date``)."""
    live = _MONITORS.pop((workspace_pk, external_id), None)
    if live is None or live.versions != context.versions_key:
        return None
    return live


def _keep_live(workspace_pk: int, external_id: str, live: _Live) -> None:
    _MONITORS.put((workspace_pk, external_id), live)


# ---------------------------------------------------------------------------------------------
# What a workspace's live sessions are monitored against

@dataclass(frozen=True)
class LiveVersion:
    id: int
    rule: str
    formula: str
    counting: str = ""


@dataclass
class Context:
    versions: list[LiveVersion]
    ruleset: RuleSet
    labeling: Labeling

    @property
    def versions_key(self) -> list[list]:
        return [[v.rule, v.id] for v in self.versions]


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def live_versions(workspace: Workspace) -> list[LiveVersion]:
    """``studio.rules.monitoring.live_versions`` as plain data (a context outlives its request)."""
    return [LiveVersion(v.id, v.rule.name, v.formula, v.counting)
            for v in monitoring.live_versions(workspace)]


def _labeling(workspace: Workspace) -> Labeling:
    """``studio.rules.monitoring.labeling_for``, built once per set of labeler declarations."""
    snapshot = monitoring.labeler_snapshot(workspace)
    key = tuple((d["atom"], d["kind"], json.dumps(d["config"], sort_keys=True))
                for d in snapshot)
    found = _LABELINGS.get(key)
    if found is None:
        found = labeling_from_snapshot(snapshot)
        _LABELINGS.put(key, found)
    return found


def context_for(workspace: Workspace) -> Context:
    ttl = settings.LIVE_CONTEXT_SECONDS
    if ttl > 0:
        with _CACHE_LOCK:
            cached = _CONTEXTS.get(workspace.pk)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
    versions = live_versions(workspace)
    context = Context(versions, _cached_ruleset(versions), _labeling(workspace))
    if ttl > 0:
        with _CACHE_LOCK:
            _CONTEXTS[workspace.pk] = (time.monotonic() + ttl, context)
    return context


# ---------------------------------------------------------------------------------------------
# Validation

class ItemError(ValueError):
    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


def _json_problem(value: Any, depth: int = 0) -> str | None:
    """Why a JSON value cannot be stored (Postgres refuses NUL characters and unpaired
    surrogates; JSON has no NaN), or None."""
    if depth > _JSON_DEPTH_MAX:
        return f"is nested more than {_JSON_DEPTH_MAX} levels deep"
    if isinstance(value, str):
        if "\x00" in value:
            return "contains a NUL character"
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return "contains an unpaired surrogate (not valid Unicode)"
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "contains a non-finite number"
    if isinstance(value, dict):
        for key, item in value.items():
            problem = _json_problem(key, depth + 1) or _json_problem(item, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, (list, tuple)):
        for item in value:
            problem = _json_problem(item, depth + 1)
            if problem:
                return problem
    return None


def _text(value: Any, field: str, limit: int, *, allow_int: bool = False) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and allow_int:
        value = str(value)
    if not isinstance(value, str):
        raise ItemError(f"{field} must be a string", field)
    if not value or len(value) > limit:
        raise ItemError(f"{field} must be 1 to {limit} characters long", field)
    return value


def _timestamp(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value) or not 0 <= value < 253402300800:  # up to year 9999
            raise ItemError("timestamp must be seconds since 1970 or an ISO 8601 string",
                            "timestamp")
        return datetime.fromtimestamp(value, tz=UTC)
    if isinstance(value, str):
        try:
            moment = parse_datetime(value.replace("Z", "+00:00") if value.endswith("Z")
                                    else value)
        except ValueError:
            moment = None
        if moment is None:
            raise ItemError("timestamp must be an ISO 8601 date and time, e.g. "
                            "2025-01-31T12:00:00Z", "timestamp")
        moment = moment if timezone.is_aware(moment) else moment.replace(tzinfo=UTC)
        # Stored in UTC: databases refuse some offsets ISO 8601 allows (Postgres: +-15:59).
        try:
            return moment.astimezone(UTC)
        except OverflowError:
            raise ItemError("timestamp is out of range (years 1 to 9999 in UTC)",
                            "timestamp") from None
    raise ItemError("timestamp must be an ISO 8601 string or seconds since 1970", "timestamp")


@dataclass
class Clean:
    """A validated event, ready to be stored."""

    event_id: str | None
    lifeline: str
    timestamp: datetime | None
    input: Any
    output: Any
    data: dict
    labels: list[str] | None
    message_id: str = ""
    message_peer: str = ""
    message_kind: str = ""

    def model(self, workspace: Workspace, session: TraceSession, step: int,
              source: str) -> Event:
        return Event(workspace=workspace, session=session, step=step, source=source,
                     event_id=self.event_id, lifeline=self.lifeline, timestamp=self.timestamp,
                     input=self.input, output=self.output, data=self.data, labels=self.labels,
                     message_id=self.message_id, message_peer=self.message_peer,
                     message_kind=self.message_kind)


def clean_event(raw: Any, session_external_id: str, default_id: str | None = None) -> Clean:
    """Validate one posted event; raises ItemError naming the field at fault.

    The step is assigned on arrival (a ``step`` the event carries is not used); fields outside
    the canonical event are kept under ``data`` (without replacing what ``data`` holds).
    """
    if not isinstance(raw, dict):
        raise ItemError("an event must be a JSON object")
    problem = _json_problem(raw)
    if problem:
        raise ItemError(f"the event {problem}")
    session = raw.get("session")
    if session is not None and str(session) != session_external_id:
        raise ItemError(f"session {str(session)[:80]!r} is not this session "
                        f"({session_external_id[:80]!r})", "session")
    event_id = raw.get("event_id")
    event_id = (_text(event_id, "event_id", EVENT_ID_MAX, allow_int=True)
                if event_id is not None else default_id)
    lifeline = raw.get("lifeline")
    lifeline = "" if lifeline is None else _text(lifeline, "lifeline", LIFELINE_MAX)
    data = raw.get("data")
    if data is None:
        data = {}
    elif not isinstance(data, dict):
        raise ItemError("data must be an object", "data")
    extra = {k: v for k, v in raw.items() if k not in _FIELDS and k not in data}
    if extra:
        data = {**data, **extra}
    labels = raw.get("labels")
    if labels is not None and (
            not isinstance(labels, list) or not all(isinstance(a, str) and a for a in labels)):
        raise ItemError("labels must be a list of atom names (non-empty strings)", "labels")
    clean = Clean(event_id, lifeline, _timestamp(raw.get("timestamp")), raw.get("input"),
                  raw.get("output"), data, labels)
    message = raw.get("message")
    if message is not None:
        if not isinstance(message, dict):
            raise ItemError("message must be an object {id, peer, kind}", "message")
        kind = message.get("kind")
        if kind not in ("send", "receive"):
            raise ItemError("message.kind must be send or receive", "message.kind")
        clean.message_id = _text(message.get("id"), "message.id", MESSAGE_FIELD_MAX,
                                 allow_int=True)
        peer = message.get("peer")
        clean.message_peer = "" if peer is None else _text(peer, "message.peer",
                                                           MESSAGE_FIELD_MAX)
        clean.message_kind = kind
    return clean


def _session_id(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > SESSION_ID_MAX:
        raise ServiceError(f"the session id must be 1 to {SESSION_ID_MAX} characters long",
                           field="session_id", status=422)
    if _json_problem(value):
        raise ServiceError("the session id must be valid text without NUL characters",
                           field="session_id", status=422)
    hidden = find_invisible(value)  # a session listed as one id that is another
    if hidden is not None:
        raise ServiceError(f"the session id contains {describe(value[hidden])} at position "
                           f"{hidden + 1}; a session id is visible text", field="session_id",
                           status=422)
    return value


# ---------------------------------------------------------------------------------------------
# Monitor state

def _compact(state: dict) -> dict:
    """The monitors' JSON without what only reports read and what grows with the session: every
    ``witness`` list emptied (counted in the TRAC monitor's ``witness_dropped``) and the lists of
    violations found (they were answered when found; the session state counts them)."""
    for rule in state.get("rules", ()):
        trac = rule.get("trac")
        if isinstance(trac, dict) and isinstance(trac.get("witness"), list):
            trac["witness_dropped"] = trac.get("witness_dropped", 0) + len(trac["witness"])
            trac["witness"] = []
        others = rule.get("violations")
        if isinstance(others, dict) and isinstance(others.get("violations"), list):
            others["violations"] = []
        _drop_witnesses(others)
    return state


def _drop_witnesses(node: Any) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "witness" and isinstance(value, list):
                node[key] = []
            else:
                _drop_witnesses(value)
    elif isinstance(node, list):
        for item in node:
            _drop_witnesses(item)


def _counts(monitor: SessionMonitor, before: dict[str, int]) -> dict[str, int]:
    """Violations found per rule: those counted in the saved state, and those the monitor has
    found since it was loaded (it holds no others)."""
    return {o.machines.rule.name: before.get(o.machines.rule.name, 0) + len(o.violations)
            for o in monitor.violation_monitors}


def _rule_states(monitor: SessionMonitor, counts: dict[str, int], open: bool = True
                 ) -> list[dict]:
    """Per rule: its one verdict in the session (``verdict``: ``session_verdict``, pending
    while the session is ``open`` unless nothing later can change it), TRAC's verdict
    (``trac_verdict``) and residual now, the verdict if the session ended now (``final``), and
    the number of violations found so far."""
    out = []
    for t in monitor.trac:
        rule = t.machines.rule
        count = counts.get(rule.name, 0)
        final = t.final() if monitor.steps else None
        one = session_verdict(count, final or ("satisfied" if rule.normal.empty_value
                                               else VIOLATED),
                              open=open, settled=t.verdict, counting=rule.counting)
        out.append({"rule": rule.name, "verdict": one, "trac_verdict": t.verdict,
                    "residual": t.residual.text, "final": final, "violations": count})
    return out


# The events a monitor reads, straight from the table (the ORM would build a model per row).
_EVENT_COLUMNS = ("step", "lifeline", "input", "output", "data", "labels")
_JSON_COLUMNS = ("input", "output", "data", "labels")


def _events_sql(*, before: bool = False, limit: bool = False) -> str:
    """Events of a session from a step on, in step order (``before``: the last one before it);
    parameters: session id, step[, limit]."""
    columns = ", ".join(_EVENT_COLUMNS)
    where = "step < %s ORDER BY step DESC LIMIT 1" if before else "step >= %s ORDER BY step"
    return (f"SELECT {columns} FROM {_table(Event)} WHERE session_id = %s AND {where}"
            + (" LIMIT %s" if limit else ""))


def _monitor_events(session_pk: int, rows: Sequence[tuple]) -> list[dict]:
    """Rows of ``_events_sql`` as the monitors and labelers read events (``as_monitor_event``)."""
    loads = [Event._meta.get_field(name).from_db_value for name in _JSON_COLUMNS]
    out = []
    for step, lifeline, *values in rows:
        input, output, data, labels = (load(value, None, connection)
                                       for load, value in zip(loads, values))
        out.append(monitor_event(session_pk, step, lifeline, input, output, data, labels))
    return out


def _read_events(session_pk: int, from_step: int) -> list[dict]:
    return _monitor_events(session_pk, _run(_events_sql(), [session_pk, from_step]))


def _event_before(session_pk: int, step: int) -> dict | None:
    found = _monitor_events(session_pk, _run(_events_sql(before=True), [session_pk, step]))
    return found[0] if found else None


def _read_state(session_pk: int) -> Any:
    rows = _run(f"SELECT monitor_state FROM {_table(TraceSession)} WHERE id = %s", [session_pk])
    return _state_value(rows[0][0]) if rows else None


def _state_value(raw: Any) -> Any:
    return TraceSession._meta.get_field("monitor_state").from_db_value(raw, None, connection)


def _feed_stored(live: _Live, events: list[dict], context: Context) -> None:
    """Monitor events already stored (catching up): no changes are answered for them."""
    if not events:
        return
    with _MONITOR_LOCK:
        monitor, previous = live.monitor, live.last
        for event in events:
            monitor.ingest(context.labeling.label(event, previous))
            previous = event
    live.steps += len(events)
    live.next_step = events[-1]["step"] + 1
    live.last = previous


def _snapshot_fits(state: Any, context: Context) -> bool:
    return (isinstance(state, dict) and state.get("format") == STATE_FORMAT
            and state.get("versions") == context.versions_key
            and isinstance(state.get("monitor"), dict)
            and type(state.get("steps")) is int and type(state.get("next_step")) is int
            and 0 <= state["steps"] <= state["next_step"])


def _from_snapshot(session_pk: int, state: dict, context: Context) -> _Live | None:
    try:
        with _MONITOR_LOCK:
            monitor = FastSessionMonitor.from_json(context.ruleset, state["monitor"],
                                                   witnesses=False)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # a state this code cannot read: the session is rebuilt
    counts = state.get("violations")
    counts = {k: v for k, v in counts.items() if type(v) is int} if isinstance(
        counts, dict) else {}
    return _Live(session_pk, context.versions_key, monitor, counts, state["steps"],
                 state["next_step"])


@dataclass
class _Restored:
    live: _Live
    rebuilt: bool          # replayed from the first event: no snapshot fitted
    behind_snapshot: int   # events monitored after the snapshot it was restored from, or 0


def _bring_up_to_date(session_pk: int, steps: int, context: Context, *, live: _Live | None,
                      after_live: list[dict] | None, state: Any = NotImplemented) -> _Restored:
    """The session's monitor over all its stored events (``steps`` of them, as the session row
    says): ``live`` (this process's, if any) with the events stored after it (``after_live``:
    those from ``live.next_step`` on, at most ``_gap_limit()`` of them); else the
    snapshot (``state``, read here unless given) with the events after it; else a replay of
    every event."""
    restored = None
    if live is not None and after_live is not None and live.pk == session_pk and (
            len(after_live) < _gap_limit()) and steps - len(after_live) == live.steps:
        _feed_stored(live, after_live, context)
        restored = _Restored(live, False, 0)
    if restored is None:
        if state is NotImplemented:
            state = _read_state(session_pk)
        if _snapshot_fits(state, context):
            tail = _read_events(session_pk, state["next_step"])
            if steps - len(tail) == state["steps"]:
                loaded = _from_snapshot(session_pk, state, context)
                if loaded is not None:
                    if context.labeling.labelers and state["steps"]:
                        loaded.last = _event_before(session_pk, state["next_step"])
                    _feed_stored(loaded, tail, context)
                    restored = _Restored(loaded, False, len(tail))
    if restored is None:
        events = _read_events(session_pk, 0) if steps else []
        rebuilt = _Live(session_pk, context.versions_key,
                        FastSessionMonitor(context.ruleset, witnesses=False), {})
        _feed_stored(rebuilt, events, context)
        restored = _Restored(rebuilt, steps > 0, 0)
    found = restored.live
    if found.last is None and found.steps and context.labeling.labelers:
        found.last = _event_before(session_pk, found.next_step)  # for labelers that read it
    return restored


def _snapshot(live: _Live) -> dict:
    """What ``monitor_state`` holds: the monitor after ``live``'s events (call after
    ``forget_history``: violations are counted, not listed)."""
    with _MONITOR_LOCK:
        monitor = _compact(live.monitor.to_json())
    return {"format": STATE_FORMAT, "versions": live.versions, "steps": live.steps,
            "next_step": live.next_step, "revision": uuid.uuid4().hex,
            "violations": dict(live.counts), "monitor": monitor}


# ---------------------------------------------------------------------------------------------
# Ingestion

class LabelerUnavailable(ServiceError):
    """A labeler that asks a model (an LLM labeler) could not answer: nothing was stored; the
    sender retries later."""

    status = 503
    retry_after = 30


@contextmanager
def _labelers_answer():
    try:
        yield
    except LLMError as exc:
        raise LabelerUnavailable(f"a labeler could not label the events ({exc.message}); "
                                 "nothing was stored, retry later") from None


class SessionEnded(ServiceError):
    """New events for a live session that was ended (by its agent or after the workspace's
    inactivity timeout): its verdicts are final, so nothing more is taken."""

    status = 409

    def __init__(self, external_id: str):
        super().__init__(f"live session {external_id!r} has ended: its verdicts are final and "
                         "it takes no more events; send them under a new session id",
                         field="session_id")


class _Retry(Exception):
    """An event id was taken by a concurrent delivery to another session: start over."""


def ingest(workspace: Workspace, session_external_id: str, events: Sequence[Any],
           source: str = SOURCE_LIVE, actor=None, *, delivery_id: str | None = None,
           context: Context | None = None) -> dict:
    """Store ``events`` for one session and advance its monitors; see the module's doc.

    ``delivery_id`` (the Standard Webhooks message id) gives events without an ``event_id`` the
    id ``<delivery_id>:<index>``, so a redelivered batch is recognised.  ``actor`` is who posted
    (an ``api.core.Actor``, or None for a signed webhook); it is not recorded per event.

    Returns ``{"session", "steps", "stored", "duplicates", "rejected", "rebuilt", "events",
    "rules"}``: per event (in the order given) its index, event id, status (``stored``,
    ``duplicate`` or ``error``), step and verdict changes (or the error and the field at
    fault); per rule its verdict, residual, final verdict (if the session ended now) and the
    number of violations found so far.
    """
    session_external_id = _session_id(session_external_id)
    if not isinstance(events, (list, tuple)):
        raise ServiceError("events must be an array", field="events", status=422)
    if len(events) > MAX_EVENTS_PER_BATCH:
        raise ServiceError(f"a batch holds at most {MAX_EVENTS_PER_BATCH} events",
                           field="events", status=413)
    invalid: dict[int, dict] = {}
    valid: list[tuple[int, Clean]] = []
    for index, raw in enumerate(events):
        default_id = f"{delivery_id}:{index}" if delivery_id else None
        try:
            valid.append((index, clean_event(raw, session_external_id, default_id)))
        except ItemError as exc:
            invalid[index] = {"index": index, "status": "error", "error": exc.message}
            if exc.field:
                invalid[index]["field"] = exc.field
    context = context or context_for(workspace)
    for attempt in range(_INSERT_ATTEMPTS):
        try:
            with _labelers_answer():
                result = _ingest_once(workspace, session_external_id, valid, source, context)
            break
        except _Retry:
            if attempt == _INSERT_ATTEMPTS - 1:
                raise ServiceError("concurrent deliveries kept claiming the same event ids; "
                                   "retry", status=409) from None
    items = sorted([*result.pop("items"), *invalid.values()], key=lambda item: item["index"])
    result["events"] = items
    result["rejected"] = sum(1 for item in items if item["status"] == "error")
    return result


# The statements every delivery runs are written out: the ORM spends about a millisecond of CPU
# building each query, as much as the monitors spend on an event (the webhook's latency budget
# is 20 ms at p99).  Everything else goes through the ORM.


# The statements every delivery runs are written out, and sent together: the ORM spends about a
# millisecond of CPU building each query, as much as the monitors spend on an event, and each
# round trip to the database costs the request a wait (the webhook's latency budget is 20 ms at
# p99).  A delivery makes three round trips: lock and read; insert and update; commit.

_ROWS_PER_INSERT = {"postgresql": 1000}  # else 60: SQLite allows 999 parameters a statement


def _gap_limit() -> int:
    """How many events stored after this process's monitor are caught up from it; past that,
    the snapshot (at most ``SNAPSHOT_EVERY`` behind) is nearer."""
    return 2 * SNAPSHOT_EVERY


def _together(statements: list[tuple[str, Sequence]]) -> list[list[tuple] | None]:
    """Run the statements in order - each on its own, seeing what the ones before did and what
    others committed meanwhile - and return the rows of each (None for a statement that returns
    none).  On Postgres they go in one round trip (psycopg's pipeline mode), on psycopg cursors
    of their own: a Django cursor costs more CPU than the statement does.  Errors are Django's
    (IntegrityError, OperationalError, ...), as from a Django cursor."""
    if connection.vendor == "postgresql" and not connection.execute_wrappers:
        connection.ensure_connection()
        raw = connection.connection
        cursors = _raw_cursors(raw, len(statements))
        started = time.monotonic()
        with connection.wrap_database_errors:
            if len(statements) == 1:
                cursors[0].execute(*statements[0])
            else:
                with raw.pipeline():
                    for cursor, (sql, params) in zip(cursors, statements):
                        cursor.execute(sql, params)
            out = [cursor.fetchall() if cursor.description else None for cursor in cursors]
        if connection.queries_logged:  # DEBUG, or a test capturing queries
            took = f"{(time.monotonic() - started) / len(statements):.3f}"
            connection.queries_log.extend({"sql": f"{sql} -- {list(params)!r}", "time": took}
                                          for sql, params in statements)
        return out
    out = []
    with connection.cursor() as cursor:
        for sql, params in statements:
            cursor.execute(sql, params)
            out.append(cursor.fetchall() if cursor.description else None)
    return out


def _raw_cursors(raw, count: int) -> list:
    """``count`` psycopg cursors on the connection, kept with it for the next request (a cursor
    copies the connection's adapters when made).  Server-side parameters: no quoting in Python;
    prepared statements as the connection's ``prepare_threshold`` says (OPTIONS)."""
    kept = getattr(raw, "_studio_live_cursors", None)
    if kept is None:
        kept = []
        raw._studio_live_cursors = kept
    while len(kept) < count:
        kept.append(psycopg.Cursor(raw))
    return kept[:count]


def _run(sql: str, params: Sequence) -> list[tuple] | None:
    return _together([(sql, params)])[0]


def _lock_sql(with_state: bool) -> str:
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    state = ", monitor_state" if with_state else ""
    return (f"SELECT id, steps, ended_at{state} FROM {_table(TraceSession)} "
            f"WHERE workspace_id = %s AND external_id = %s{lock}")


def _known_sql(count: int) -> str:
    marks = ", ".join(["%s"] * count)
    return (f"SELECT event_id, session_id, step FROM {_table(Event)} "
            f"WHERE workspace_id = %s AND source = %s AND event_id IN ({marks})")


@dataclass
class _Locked:
    pk: int
    steps: int
    known: dict[str, tuple[int, int]]  # event_id -> (session id, step), for the ids posted
    after_live: list[dict] | None      # events from the cached monitor's next step on
    state: Any                         # monitor_state, or NotImplemented when not read
    ended: bool = False                # the session was ended: no new event is taken


def _lock_and_read(workspace: Workspace, external_id: str, source: str, ids: set[str],
                   live: _Live | None) -> _Locked:
    """The session's row, locked until the transaction ends (created when new); with it, the
    event ids already stored, and the events stored after this process's monitor (or, without
    one, the saved snapshot).  Concurrent creators meet on the unique (workspace, external_id):
    one inserts, the others wait for it and then lock the same row."""
    if connection.vendor == "postgresql":
        found = _lock_and_read_at_once(workspace, external_id, source, ids, live)
    else:
        statements: list[tuple[str, Sequence]] = [(_lock_sql(live is None),
                                                   [workspace.pk, external_id])]
        if ids:
            statements.append((_known_sql(len(ids)), [workspace.pk, source, *ids]))
        if live is not None:
            statements.append((_events_sql(limit=True), [live.pk, live.next_step,
                                                         _gap_limit()]))
        results = _together(statements)
        row = results[0][0] if results[0] else None
        found = None
        if row is not None:
            known = {e: (s, step) for e, s, step in results[1]} if ids else {}
            after_live = (_monitor_events(live.pk, results[-1]) if live is not None else None)
            state = _state_value(row[3]) if live is None else NotImplemented
            found = _Locked(row[0], row[1], known, after_live, state, row[2] is not None)
    if found is not None:
        return found
    TraceSession.objects.bulk_create(
        [TraceSession(workspace=workspace, external_id=external_id, source=SOURCE_LIVE)],
        ignore_conflicts=True)
    row = _run(_lock_sql(True), [workspace.pk, external_id])[0]
    known = {}
    if ids:  # asked again: a concurrent creator may have stored some meanwhile
        known = {e: (s, step) for e, s, step in _run(_known_sql(len(ids)),
                                                      [workspace.pk, source, *ids])}
    return _Locked(row[0], row[1], known, None, _state_value(row[3]), row[2] is not None)


def _lock_and_read_at_once(workspace: Workspace, external_id: str, source: str, ids: set[str],
                           live: _Live | None) -> _Locked | None:
    """``_lock_and_read`` in one statement (Postgres), or None when the session is new.

    What it reads besides the locked row is read as the statement started, which may be before
    it had to wait for the lock: then it misses what the delivery it waited for stored.  Both
    are safe: a missed event id makes the insert fail (the delivery starts over, and sees it),
    and missed events make the count of events after the cached monitor disagree with the
    session's steps (read from the locked row, which is current), so the monitor is not used."""
    params: list = []
    if ids:
        params += [workspace.pk, source, *ids]
    if live is not None:
        params += [live.pk, live.next_step, _gap_limit()]
    rows = _run(_lock_and_read_sql(live is None, len(ids), live is not None),
                [*params, workspace.pk, external_id])
    if not rows:
        return None
    row = list(rows[0])
    pk, steps, ended = row[0], row[1], row.pop(2) is not None
    state = _state_value(row.pop(2)) if live is None else NotImplemented
    known: dict[str, tuple[int, int]] = {}
    if ids:
        known = {e: (s, step) for e, s, step in _json_value(row.pop(2)) or ()}
    after_live = None
    if live is not None:
        after_live = [monitor_event(live.pk, step, lifeline, input, output, data, labels)
                      for step, lifeline, input, output, data, labels
                      in _json_value(row.pop(2)) or ()]
    return _Locked(pk, steps, known, after_live, state, ended)


@functools.lru_cache(maxsize=64)
def _lock_and_read_sql(with_state: bool, ids: int, with_events: bool) -> str:
    columns = ["s.id", "s.steps", "s.ended_at"]
    if with_state:
        columns.append("s.monitor_state")
    if ids:
        columns.append(
            "(SELECT json_agg(json_build_array(e.event_id, e.session_id, e.step)) "
            f"FROM {_table(Event)} e WHERE e.workspace_id = %s AND e.source = %s "
            f"AND e.event_id IN ({', '.join(['%s'] * ids)}))")
    if with_events:
        columns.append(
            "(SELECT json_agg(json_build_array(g.step, g.lifeline, g.input, g.output, g.data, "
            f"g.labels) ORDER BY g.step) FROM (SELECT {', '.join(_EVENT_COLUMNS)} "
            f"FROM {_table(Event)} WHERE session_id = %s AND step >= %s ORDER BY step "
            "LIMIT %s) g)")
    return (f"SELECT {', '.join(columns)} FROM {_table(TraceSession)} s "
            "WHERE s.workspace_id = %s AND s.external_id = %s FOR UPDATE OF s")


def _json_value(value: Any) -> Any:
    """A ``json`` column's value (psycopg parses it, unless told to hand the text over)."""
    return json.loads(value) if isinstance(value, (str, bytes)) else value


# Event's columns as ``_insert_statements`` fills them, and which of them need the field's
# conversion for the database (JSON, timestamps); the others are passed as they are.
_INSERTED = ("workspace", "session", "upload", "step", "source", "event_id", "lifeline",
             "timestamp", "input", "output", "data", "labels", "message_id", "message_peer",
             "message_kind")
_CONVERTED = frozenset({"timestamp", "input", "output", "data", "labels"})


def _insert_statements(workspace: Workspace, session_pk: int, source: str,
                       rows: list[tuple[int, Clean]]) -> list[tuple[str, list]]:
    """``bulk_create`` written out (the same columns and conversions, no returned ids): an
    IntegrityError still means an event id another delivery stored first."""
    fields = [Event._meta.get_field(name) for name in _INSERTED]
    # Columns added to Event since are filled with their defaults, as bulk_create would.
    others = [f for f in Event._meta.concrete_fields
              if not f.primary_key and f.name not in _INSERTED]
    defaults = [f.get_db_prep_save(f.get_default(), connection) for f in others]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in [*fields, *others])
    prepare = [f.get_db_prep_save if f.name in _CONVERTED else None for f in fields]
    row_marks = "(" + ", ".join(["%s"] * (len(fields) + len(others))) + ")"
    per_statement = _ROWS_PER_INSERT.get(connection.vendor, 60)
    statements = []
    for start in range(0, len(rows), per_statement):
        chunk = rows[start:start + per_statement]
        values: list = []
        for step, c in chunk:
            raw = (workspace.pk, session_pk, None, step, source, c.event_id, c.lifeline,
                   c.timestamp, c.input, c.output, c.data, c.labels, c.message_id,
                   c.message_peer, c.message_kind)
            values.extend(value if convert is None else convert(value, connection)
                          for convert, value in zip(prepare, raw))
            values.extend(defaults)
        marks = ", ".join([row_marks] * len(chunk))
        statements.append((f"INSERT INTO {_table(Event)} ({columns}) VALUES {marks}", values))
    return statements


def _session_update(session_pk: int, steps: int, touched: bool, state: dict | None
                    ) -> tuple[str, list]:
    sets, params = ["steps = %s"], [steps]
    if touched:
        sets.append("last_event_at = %s")
        params.append(TraceSession._meta.get_field("last_event_at").get_db_prep_save(
            timezone.now(), connection))
    if state is not None:
        sets.append("monitor_state = %s")
        params.append(TraceSession._meta.get_field("monitor_state").get_db_prep_save(
            state, connection))
    params.append(session_pk)
    return f"UPDATE {_table(TraceSession)} SET {', '.join(sets)} WHERE id = %s", params


def _write(inserts: list[tuple[str, list]], update: tuple[str, list] | None) -> None:
    """The inserts, then the session's update: on Postgres one statement when the events fit
    in one insert (a data-modifying WITH), else in one round trip."""
    if connection.vendor == "postgresql" and len(inserts) == 1 and update is not None:
        (insert, values), (sql, params) = inserts[0], update
        _run(f"WITH inserted AS ({insert}) {sql}", [*values, *params])
    elif inserts or update is not None:
        _together([*inserts, *([update] if update is not None else [])])


def _ingest_once(workspace: Workspace, external_id: str, valid: list[tuple[int, Clean]],
                 source: str, context: Context) -> dict:
    items: list[dict] = []
    ids = {c.event_id for _, c in valid if c.event_id is not None}
    cached = _take_live(workspace.pk, external_id, context)
    with transaction.atomic():
        if not settings.LIVE_DURABLE_COMMIT and connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # see the setting: latency against durability
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        locked = _lock_and_read(workspace, external_id, source, ids, cached)
        session_pk, steps_before, known = locked.pk, locked.steps, locked.known
        if locked.ended and any(c.event_id is None or c.event_id not in known
                                for _, c in valid):
            raise SessionEnded(external_id)
        restored = _bring_up_to_date(session_pk, steps_before, context, live=cached,
                                     after_live=locked.after_live, state=locked.state)
        live = restored.live
        monitor = live.monitor
        # Uploaded logs may leave gaps in step numbers (0, 1, 5): continue after the last one,
        # not after the count, or a new event would collide with a stored step.
        first_step = max(live.next_step, steps_before)
        rows: list[tuple[int, Clean]] = []
        duplicates = 0
        previous = live.last
        with _MONITOR_LOCK:
            for index, clean in valid:
                seen = known.get(clean.event_id) if clean.event_id is not None else None
                if seen is not None and seen[0] != session_pk:
                    items.append({"index": index, "event_id": clean.event_id, "status": "error",
                                  "error": f"event_id {clean.event_id!r} was already stored in "
                                           "another session", "field": "event_id"})
                    continue
                if seen is not None:
                    items.append({"index": index, "event_id": clean.event_id,
                                  "status": "duplicate", "step": seen[1], "changes": []})
                    duplicates += 1
                    continue
                step = first_step + len(rows)
                event = monitor_event(session_pk, step, clean.lifeline, clean.input,
                                      clean.output, clean.data, clean.labels)
                changes = monitor.feed(context.labeling.label(event, previous))
                previous = event
                rows.append((step, clean))
                if clean.event_id is not None:
                    known[clean.event_id] = (session_pk, step)  # repeated later in the batch
                items.append({"index": index, "event_id": clean.event_id, "status": "stored",
                              "step": step, "changes": changes})
            counts = _counts(monitor, live.counts)
            rules = _rule_states(monitor, counts, open=not locked.ended)
            monitor.forget_history()
        # The causal guards of choice events (multi-agent sessions): see causal_guards.
        guards = (causal_guards.decide(workspace, external_id, session_pk, steps_before, rows)
                  if source == SOURCE_LIVE else causal_guards.NONE)
        live.counts = counts
        steps = steps_before + len(rows)
        if rows:
            live.steps += len(rows)
            live.next_step = first_step + len(rows)
            live.last = previous
        # A snapshot when the session starts or was rebuilt, then every SNAPSHOT_EVERY events.
        snapshot = None
        if restored.rebuilt or (rows and (
                steps_before == 0 or steps_before // SNAPSHOT_EVERY != steps // SNAPSHOT_EVERY
                or restored.behind_snapshot >= SNAPSHOT_EVERY)):
            snapshot = _snapshot(live)
        if locked.ended:
            snapshot = None  # the end's snapshot (end violations counted) stays as it is
        inserts = []
        if rows:
            # In id order, so two deliveries sharing event ids never wait on each other in a
            # cycle; a clash with a concurrent delivery to another session means start over.
            rows.sort(key=lambda r: r[1].event_id or "")
            inserts = _insert_statements(workspace, session_pk, source, rows)
        update = (_session_update(session_pk, steps, bool(rows), snapshot)
                  if rows or snapshot is not None else None)
        try:
            _write(inserts, update)
        except IntegrityError:
            raise _Retry() from None
        if rows:  # the tools, labels and fields these events show, counted (one statement)
            vocabulary.record(workspace, vocabulary.counts_of(
                workspace, [(c.input, c.output, c.data, c.labels) for _, c in rows]))
        # Only what was committed may be reused: a rolled-back delivery leaves nothing.
        transaction.on_commit(lambda: _keep_live(workspace.pk, external_id, live))
    result = {"session": external_id, "steps": steps, "stored": len(rows),
              "duplicates": duplicates, "rebuilt": restored.rebuilt, "items": items,
              "rules": rules}
    guards.attach(items, result)
    return result


def current_rules(session: TraceSession, context: Context) -> dict:
    """What the session's monitors say about each rule now, for the rule versions its snapshot
    was built for (what the agent was last answered): ``{"rules": [{rule, verdict, residual,
    final, violations}], "note": why it may differ from the live rules, or ""}``.  ``context``:
    the workspace's live context (its rule versions, for the note, and its labeling)."""
    state = session.monitor_state
    if not isinstance(state, dict) or not isinstance(state.get("monitor"), dict):
        return {"rules": [], "note": "no event has been monitored yet"}
    key = state.get("versions") or []
    unreadable = {"rules": [], "note": "the saved monitor state cannot be read; the next event "
                                       "rebuilds it from the stored events"}
    try:
        ids = [int(version_id) for _, version_id in key]
        stored = {pk: (formula, counting) for pk, formula, counting in RuleVersion.objects
                  .filter(id__in=ids).values_list("id", "formula", "counting")}
        versions = [LiveVersion(int(version_id), rule, *stored[int(version_id)])
                    for rule, version_id in key]
        saved_for = Context(versions, _cached_ruleset(versions), context.labeling)
    except (KeyError, TypeError, ValueError):
        return unreadable
    if not _snapshot_fits(state, saved_for):
        return unreadable
    tail = _read_events(session.pk, state["next_step"])
    if session.steps - len(tail) != state["steps"]:
        return {"rules": [], "note": "the stored events do not match the saved monitor state; "
                                     "the next event re-monitors the session"}
    live = _from_snapshot(session.pk, state, saved_for)
    if live is None:
        return unreadable
    try:
        if tail and context.labeling.labelers and state["steps"]:
            live.last = _event_before(session.pk, state["next_step"])
        _feed_stored(live, tail, saved_for)
    except LLMError:
        return {"rules": [], "note": "a labeler could not label the latest events; retry later"}
    with _MONITOR_LOCK:
        rules = _rule_states(live.monitor, _counts(live.monitor, live.counts),
                             open=session.is_open)
        # Anticipation (issue 17): the four-valued verdict over the whole session, and why.
        for rule, complete in zip(rules, verdicts_now(live.monitor)):
            rule.update(complete=complete["complete"], complete_reason=complete["reason"])
    note = ""
    if key != context.versions_key:
        note = ("monitored against earlier rule versions; the next event re-monitors the "
                "session against the current live rules")
    return {"rules": rules, "note": note}


# ---------------------------------------------------------------------------------------------
# Checking candidates

@dataclass
class SessionNow:
    """A live session as it stands, for questions about its next step (nothing locked, nothing
    stored): its row (``pk`` None when no event was posted yet), the monitors' saved form
    (``state``, None before the first step), the last event (``previous``, for labelers that
    compare with it) and the violations counted so far per rule."""

    external_id: str
    pk: int | None
    steps: int
    state: dict | None
    previous: dict | None
    counts: dict[str, int]

    def monitor(self, context: Context) -> FastSessionMonitor:
        """A fresh copy of the session's monitors (the caller may advance it)."""
        with _MONITOR_LOCK:
            if self.state is None:
                return FastSessionMonitor(context.ruleset, witnesses=False)
            return FastSessionMonitor.from_json(context.ruleset, self.state, witnesses=False)

    def monitor_event(self, clean: Clean, steps_ahead: int = 0) -> dict:
        return monitor_event(self.pk, self.steps + steps_ahead, clean.lifeline, clean.input,
                             clean.output, clean.data, clean.labels)


def session_now(workspace: Workspace, session_external_id: str, context: Context
                ) -> SessionNow:
    """The session's monitors brought up to date with its stored events (this process's copy
    when it fits, else the snapshot, else a replay).  ``SessionEnded`` for an ended session;
    ``LabelerUnavailable`` when a labeler cannot label the events it has to catch up on."""
    session_external_id = _session_id(session_external_id)
    cached = _take_live(workspace.pk, session_external_id, context)
    state_column = ", monitor_state" if cached is None else ""
    statements: list[tuple[str, Sequence]] = [(
        f"SELECT id, steps, ended_at{state_column} FROM {_table(TraceSession)} "
        "WHERE workspace_id = %s AND external_id = %s", [workspace.pk, session_external_id])]
    if cached is not None:
        statements.append((_events_sql(limit=True), [cached.pk, cached.next_step,
                                                     _gap_limit()]))
    results = _together(statements)
    row = results[0][0] if results[0] else None
    if row is None:
        return SessionNow(session_external_id, None, 0, None, None, {})
    session_pk, steps = row[0], row[1]
    if row[2] is not None:
        raise SessionEnded(session_external_id)
    with _labelers_answer():
        live = _bring_up_to_date(
            session_pk, steps, context, live=cached,
            after_live=(_monitor_events(cached.pk, results[1])
                        if cached is not None else None),
            state=_state_value(row[3]) if cached is None else NotImplemented).live
    previous = live.last if context.labeling.labelers else None
    with _MONITOR_LOCK:
        counts = _counts(live.monitor, live.counts)
        state = _compact(live.monitor.to_json())
    _keep_live(workspace.pk, session_external_id, live)  # it fits what was read
    return SessionNow(session_external_id, session_pk, steps, state, previous, counts)


def label_event(context: Context, event: dict, previous: dict | None) -> dict:
    """The monitor event with the workspace's labels (``LabelerUnavailable`` if a labeler that
    asks a model cannot answer)."""
    with _labelers_answer():
        return context.labeling.label(event, previous)


def rules_if(context: Context, now: SessionNow, monitor: FastSessionMonitor,
             changes: list[dict]) -> list[dict]:
    """Per rule, what a candidate step (already fed to ``monitor``, which reported
    ``changes``) would do: whether it violates, the verdict and residual it leaves."""
    with _MONITOR_LOCK:
        after = _rule_states(monitor, _counts(monitor, now.counts))
    rules = []
    for rule in after:
        mine = [c for c in changes if c["rule"] == rule["rule"]]
        violates = any(c.get("verdict") == VIOLATED or "violation" in c for c in mine)
        rules.append({"rule": rule["rule"], "violates": violates,
                      "verdict": rule["verdict"], "trac_verdict": rule["trac_verdict"],
                      "residual": rule["residual"],
                      "violations": [c["violation"] for c in mine if "violation" in c]})
    return rules


def check(workspace: Workspace, session_external_id: str, candidates: Sequence[Any],
          context: Context | None = None) -> dict:
    """For each candidate next event (each on its own, from the session as it stands): per rule,
    whether it would violate - TRAC's verdict becoming violated, or a new violation instance -
    the verdict and the residual it would leave.  Stores nothing, locks nothing."""
    session_external_id = _session_id(session_external_id)
    if not isinstance(candidates, (list, tuple)):
        raise ServiceError("candidates must be an array", field="candidates", status=422)
    if len(candidates) > MAX_EVENTS_PER_BATCH:
        raise ServiceError(f"at most {MAX_EVENTS_PER_BATCH} candidates", field="candidates",
                           status=413)
    context = context or context_for(workspace)
    now = session_now(workspace, session_external_id, context)
    out = []
    for index, raw in enumerate(candidates):
        try:
            clean = clean_event(raw, session_external_id)
        except ItemError as exc:
            out.append({"index": index, "error": exc.message, "field": exc.field})
            continue
        monitor = now.monitor(context)
        event = label_event(context, now.monitor_event(clean), now.previous)
        with _MONITOR_LOCK:
            changes = monitor.feed(event)
        rules = rules_if(context, now, monitor, changes)
        out.append({"index": index, "violates": any(r["violates"] for r in rules),
                    "rules": rules})
    return {"session": session_external_id, "steps": now.steps, "candidates": out}


# ---------------------------------------------------------------------------------------------
# Ending sessions

def end_session(workspace: Workspace, session_external_id: str, actor=None, *,
                reason: str = "ended by its agent", context: Context | None = None) -> dict:
    """End a live session: it takes no more events (``SessionEnded``), and each rule gets its
    end verdict - what the end of the session reveals (``end_violations``: an obligation still
    owed, an eventuality never met) is counted with the violations found before.  Ending an
    ended session changes nothing and answers the same.

    Returns ``{"session", "steps", "ended_at", "already_ended", "rules"}``, ``rules`` as
    ``ingest`` answers them, with ``end_violations``: those the end revealed."""
    session_external_id = _session_id(session_external_id)
    context = context or context_for(workspace)
    # This process's monitor is not used (nor kept): the end is computed from the stored state.
    _take_live(workspace.pk, session_external_id, context)
    with transaction.atomic():
        session = (TraceSession.objects.select_for_update()
                   .filter(workspace=workspace, external_id=session_external_id,
                           source=SOURCE_LIVE).first())
        if session is None:
            raise ServiceError(f"no live session {session_external_id!r} in this workspace",
                               field="session_id", status=404)
        if session.ended_at is not None:
            current = current_rules(session, context)
            return {"session": session.external_id, "steps": session.steps,
                    "ended_at": session.ended_at, "already_ended": True,
                    "rules": [{**r, "end_violations": None} for r in current["rules"]]}
        with _labelers_answer():
            live = _bring_up_to_date(session.pk, session.steps, context, live=None,
                                     after_live=None, state=session.monitor_state).live
        with _MONITOR_LOCK:
            monitor = live.monitor
            found = _counts(monitor, live.counts)
            ended = {r.rule: sum(1 for v in r.violations if v.at_end)
                     for r in monitor.results()}
            counts = {name: found.get(name, 0) + ended.get(name, 0) for name in found}
            rules = [{**r, "end_violations": ended.get(r["rule"], 0)}
                     for r in _rule_states(monitor, counts, open=False)]
            monitor.forget_history()
        live.counts = counts
        session.ended_at = timezone.now()
        session.monitor_state = _snapshot(live)
        session.save(update_fields=["ended_at", "monitor_state"])
        from studio.workspaces.services import record

        record(workspace, actor, LogAction.LIVE_SESSION_ENDED, session,
               session=session.external_id, reason=reason, steps=session.steps,
               verdicts={r["rule"]: r["verdict"] for r in rules})
    return {"session": session.external_id, "steps": session.steps,
            "ended_at": session.ended_at, "already_ended": False, "rules": rules}


def end_idle_sessions(now: datetime | None = None) -> int:
    """End every live session that had no event for its workspace's
    ``live_inactivity_minutes`` (0: never); returns how many were ended.  Beat runs it
    (worker.live.end_idle_live_sessions); a session that cannot be ended now (a labeler that
    does not answer) is tried again next time."""
    from datetime import timedelta

    now = now or timezone.now()
    ended = 0
    for workspace in Workspace.objects.filter(live_inactivity_minutes__gt=0):
        cutoff = now - timedelta(minutes=workspace.live_inactivity_minutes)
        idle = (TraceSession.objects.filter(workspace=workspace, source=SOURCE_LIVE,
                                            ended_at__isnull=True)
                .filter(models.Q(last_event_at__lt=cutoff)
                        | models.Q(last_event_at__isnull=True, created_at__lt=cutoff))
                .values_list("external_id", flat=True))
        for external_id in list(idle):
            try:
                answer = end_session(workspace, external_id,
                                     reason=f"no event for {workspace.live_inactivity_minutes} "
                                            "minutes")
            except LabelerUnavailable:
                continue
            ended += not answer["already_ended"]
    return ended
