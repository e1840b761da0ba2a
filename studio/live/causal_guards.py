"""The workspace's causal guards (CPL, paper 001) decided on live deliveries, as they arrive.

A live event whose ``data.choice`` names guards is a choice event: each guard it names is
evaluated over the causal past of that event - the session's stored events and the events of
this delivery before it - and the events route answers the values in the event's item::

    "guards": [{"guard": "merge_ok", "value": false, "reason": "...", "seen": {"TestRunner": 3}}]

``value`` is null when the guard cannot be decided, and ``reason`` says why: no guard of that
name is declared in the workspace (live choices use the workspace's declared guards only; the
MSC page also reads definitions written in the log), the guard is owned by another lifeline,
``data.choice`` is not a name or a list of names, or the choice's lifeline received a message
whose send has not been posted yet - the choice is then decided when the send arrives, and that
delivery's answer lists it under ``"guards"`` at the top, with its ``step``.  The MSC page shows
the same values (``studio.web.message_chart_pages``): a guard's causal value does not depend on the
order in which the events arrived.

Nothing is replayed per event.  Each server process keeps, per session, the guards' monitor
(``studio.causal.live.LiveGuards``) over the events it has seen, as ``snapshots`` keeps the rules'
monitors: taken out of the cache for a delivery and put back when it commits.  It is built -
from the session's stored events, once - at the first choice event the process sees in the
session, and again only when a new lifeline appears (the monitor is compiled for its
lifelines), the declared guards change, or other processes stored events it has not seen (it
then reads just those).  Deliveries to sessions without choice events, or before their first
one, cost one membership test per event.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.urls import reverse

from studio.caching import LruCache
from studio.causal.live import GuardAnswer, LiveGuards, NewLifeline
from studio.causal.msc import CHOICE_KEY
from studio.rules.models import CausalGuard
from studio.traces.models import Event
from studio.workspaces.models import Workspace

from . import storage

# A lifeline name for events that have none, as the MSC page charts them.
UNNAMED_LIFELINE = "(no lifeline)"
_STATES_MAX = 2048

_LOCK = threading.Lock()
_STATES: LruCache[tuple[int, str], _State] = LruCache(_STATES_MAX)
_DECLARED: dict[int, tuple[float, tuple]] = {}


def clear() -> None:
    with _LOCK:
        _STATES.clear()
        _DECLARED.clear()


def forget_declarations(**_signal) -> None:
    """A causal guard was declared, changed or deleted: read them again at the next choice."""
    with _LOCK:
        _DECLARED.clear()


@dataclass(eq=False)
class _State:
    """The guards' monitor of one session over its events with a step below ``next_step``
    (``fed`` of them), for the declarations ``key``."""

    session_pk: int
    key: tuple
    guards: LiveGuards
    fed: int = 0
    next_step: int = 0


def declared(workspace: Workspace) -> tuple:
    """The workspace's causal guards as ``((name, cpl, owner), ...)``, read again after
    ``settings.LIVE_CONTEXT_SECONDS`` (at once in this process when one changes)."""
    ttl = settings.LIVE_CONTEXT_SECONDS
    with _LOCK:
        cached = _DECLARED.get(workspace.pk)
    if ttl > 0 and cached is not None and cached[0] > time.monotonic():
        return cached[1]
    key = tuple(CausalGuard.objects.filter(workspace_id=workspace.pk).order_by("name")
                .values_list("name", "cpl", "owner"))
    if ttl > 0:
        with _LOCK:
            _DECLARED[workspace.pk] = (time.monotonic() + ttl, key)
    return key


def _event(step: int, lifeline: str, data: Any, message_id: str, message_peer: str,
           message_kind: str) -> dict:
    return {"step": step, "lifeline": lifeline or UNNAMED_LIFELINE,
            "data": data if isinstance(data, dict) else {},
            "message_id": message_id or None, "message_peer": message_peer or None,
            "message_kind": message_kind or None}


def _stored(session_pk: int, from_step: int) -> list[dict]:
    """The session's stored events from a step on, in step order.  Written out and run as
    ``storage`` runs its statements: the ORM would spend about a millisecond of CPU building
    the query, and a monitor kept by another process catches up here at most deliveries."""
    sql = (f"SELECT step, lifeline, data, message_id, message_peer, message_kind FROM "
           f"{connection.ops.quote_name(Event._meta.db_table)} WHERE session_id = %s AND "
           "step >= %s ORDER BY step")
    load = Event._meta.get_field("data").from_db_value
    return [_event(step, lifeline, load(data, None, connection), *message)
            for step, lifeline, data, *message in storage.run(sql, [session_pk, from_step])]


def _build(workspace: Workspace, session_pk: int, key: tuple, lifelines: set[str]) -> _State:
    """The guards' monitor over every stored event of the session."""
    stored = _stored(session_pk, 0)
    names = dict.fromkeys(e["lifeline"] for e in stored)
    names.update(dict.fromkeys(sorted(lifelines)))
    page = reverse("guards", args=[workspace.slug])
    guards = LiveGuards({name: {"cpl": cpl, "owner": owner or None} for name, cpl, owner in key},
                        names, unknown=f"no causal guard of that name is declared in workspace "
                                       f"{workspace.slug!r} (declare it on {page} for live "
                                       "choices to decide it)")
    state = _State(session_pk, key, guards)
    _feed(state, stored)
    return state


def _feed(state: _State, events: list[dict]) -> list[GuardAnswer]:
    answers = [a for event in events for a in state.guards.add(event)]
    if events:
        state.fed += len(events)
        state.next_step = events[-1]["step"] + 1
    return answers


def _take(workspace_pk: int, external_id: str) -> _State | None:
    return _STATES.pop((workspace_pk, external_id), None)


def _keep(workspace_pk: int, external_id: str, state: _State) -> None:
    _STATES.put((workspace_pk, external_id), state)


@dataclass
class Answers:
    """A delivery's guard answers: per step of one of its events, and for earlier choice events
    that this delivery let be decided (``late``)."""

    by_step: dict[int, list[dict]]
    late: list[dict]

    def attach(self, items: list[dict], result: dict) -> None:
        """Into the events route's answer: ``guards`` in each choice event's item, and the
        late ones at the top."""
        if self.by_step:
            for item in items:
                found = self.by_step.get(item.get("step")) if item["status"] == "stored" else None
                if found is not None:
                    item["guards"] = found
        if self.late:
            result["guards"] = self.late


NONE = Answers({}, [])


def _as_dict(answer: GuardAnswer, with_step: bool = False) -> dict:
    out = {"guard": answer.guard, "value": answer.value, "reason": answer.reason,
           "lifeline": answer.lifeline}
    if answer.seen:
        out["seen"] = dict(answer.seen)
    if with_step:
        out = {"step": answer.step, **out}
    return out


def _releases(workspace: Workspace, session_pk: int, rows: Sequence[tuple[int, Any]]) -> bool:
    """Whether a send among ``rows`` may release a choice event held behind its receive, when
    this process keeps no monitor for the session: the workspace has guards and the receive is
    stored (one query, for deliveries with sends in such workspaces only)."""
    sends = [c.message_id for _, c in rows if c.message_kind == "send"]
    return bool(sends) and bool(declared(workspace)) and Event.objects.filter(
        session_id=session_pk, message_kind="receive", message_id__in=sends).exists()


def decide(workspace: Workspace, external_id: str, session_pk: int, steps_before: int,
           rows: Sequence[tuple[int, Any]]) -> Answers:
    """The guards of the choice events among ``rows`` (``(step, events.Clean)``, in step
    order: the events this delivery stores, after the ``steps_before`` stored ones).  Call in
    the delivery's transaction, holding the session's lock; the monitor is kept for the next
    delivery when the transaction commits."""
    state = _take(workspace.pk, external_id)
    choices = any(CHOICE_KEY in clean.data for _, clean in rows)
    if state is None and not choices and not _releases(workspace, session_pk, rows):
        return NONE
    key = declared(workspace)
    events = [_event(step, c.lifeline, c.data, c.message_id, c.message_peer, c.message_kind)
              for step, c in rows]
    if state is not None and (state.session_pk != session_pk or state.key != key):
        state = None
    if state is not None and state.fed != steps_before:  # events stored by another process
        missed = _stored(session_pk, state.next_step)
        if state.fed + len(missed) == steps_before:
            try:
                _feed(state, missed)
            except NewLifeline:
                state = None
        else:
            state = None
    lifelines = {e["lifeline"] for e in events}
    if state is not None and not lifelines <= set(state.guards.lifelines):
        state = None
    if state is None:
        state = _build(workspace, session_pk, key, lifelines)
    found = _feed(state, events)
    transaction.on_commit(lambda: _keep(workspace.pk, external_id, state))
    if not found:
        return NONE
    # The last answer for a (step, guard) stands: a held choice answered "not decided yet" may
    # be decided later in the same delivery.
    last: dict[tuple, GuardAnswer] = {}
    for answer in found:
        last.pop((answer.step, answer.guard), None)
        last[(answer.step, answer.guard)] = answer
    ours = {step for step, _ in rows}
    by_step: dict[int, list[dict]] = {}
    late = []
    for answer in last.values():
        if answer.step in ours:
            by_step.setdefault(answer.step, []).append(_as_dict(answer))
        else:
            late.append(_as_dict(answer, with_step=True))
    return Answers(by_step, late)
