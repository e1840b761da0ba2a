"""A live session's monitors, kept between deliveries: in this process, and saved in the session.

The stored events are the truth: a session's monitors are, by definition, the replay of its
events in step order against the live rule versions.  What is kept besides is a cache of that
replay, at two levels:

* a snapshot in ``TraceSession.monitor_state``: the monitors' state after the events with a step
  below ``next_step`` (``steps`` of them), with the rule versions it was built for and the
  violations counted so far.  It is kept small - verdicts, residuals, open obligations, no
  witnesses - and saved when a session starts, when it is rebuilt, and then once every
  ``SNAPSHOT_EVERY`` events, not at every delivery;
* in each server process, the session's monitor as that process left it (``LiveMonitor``).

Either one is only used for what it is: the replay of the events below its ``next_step``, which
holds exactly when the session still has that many events there (the session's ``steps`` minus
the events from ``next_step`` on, read under the row lock).  It is then brought up to date by
monitoring the events stored after it - by other processes, or by an upload - in step order.
So whichever process takes which delivery, the answers are those of one monitor that saw every
event in order.  A snapshot for other rule versions (or none, or one that does not fit the
events) means the session is rebuilt from all its events (``rebuilt`` in the answer).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from studio.caching import LruCache
from studio.monitor import VIOLATED, FastSessionMonitor, SessionMonitor
from studio.monitor.anticipation import verdicts_now
from studio.monitor.verdicts import session_verdict

from . import storage
from .context import MONITOR_LOCK, Context

STATE_FORMAT = 1
SNAPSHOT_EVERY = 32  # events between two snapshots of a session's monitors (at most)

# A session's monitor stays in memory after a delivery, so the next delivery to it in this
# process need not read the snapshot.
_MONITORS_MAX = 2048
_MONITORS: LruCache[tuple[int, str], LiveMonitor] = LruCache(_MONITORS_MAX)


def clear() -> None:
    _MONITORS.clear()


@dataclass(eq=False)
class LiveMonitor:
    """A session's monitor: the replay of its events with a step below ``next_step`` (``steps``
    of them, the last one ``last``) against the rule versions ``versions``.  ``counts``: the
    violations per rule found before those the monitor still lists (``violation_counts``)."""

    pk: int
    versions: list
    monitor: FastSessionMonitor
    counts: dict[str, int]
    steps: int = 0
    next_step: int = 0
    last: dict | None = None


def take_live(workspace_pk: int, external_id: str, context: Context) -> LiveMonitor | None:
    """The session's monitor as this process left it, for the live rule versions.  Taken out of
    the cache: the caller owns it until it puts it back (after commit); whether it still fits the
    stored events is for the caller to check (``bring_up_to_date``)."""
    live = _MONITORS.pop((workspace_pk, external_id), None)
    if live is None or live.versions != context.versions_key:
        return None
    return live


def keep_live(workspace_pk: int, external_id: str, live: LiveMonitor) -> None:
    _MONITORS.put((workspace_pk, external_id), live)


def forget_live(workspace_pk: int, external_id: str) -> None:
    """Drop this process's monitor of a session whose events were moved away."""
    _MONITORS.pop((workspace_pk, external_id), None)


def compact_state(state: dict) -> dict:
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


def violation_counts(monitor: SessionMonitor, before: dict[str, int]) -> dict[str, int]:
    """Violations found per rule: those counted in the saved state, and those the monitor has
    found since it was loaded (it holds no others)."""
    return {o.machines.rule.name: before.get(o.machines.rule.name, 0) + len(o.violations)
            for o in monitor.violation_monitors}


def rule_states(monitor: SessionMonitor, counts: dict[str, int], open: bool = True
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


def rules_now(monitor: SessionMonitor, counts: dict[str, int], open: bool,
              wait: bool = False) -> list[dict]:
    """``rule_states`` with each rule's four-valued verdict over the whole session and why
    (``complete``, ``complete_reason``: the anticipation, issue 17).  Under MONITOR_LOCK.  A
    request does not wait for a state never searched (issue 27, item 4): its ``complete`` is
    None ("not yet known") and the search runs off the request path."""
    rules = rule_states(monitor, counts, open=open)
    for rule, complete in zip(rules, verdicts_now(monitor, ended=not open, wait=wait)):
        rule.update(complete=complete["complete"], complete_reason=complete["reason"])
    return rules


def feed_stored(live: LiveMonitor, events: list[dict], context: Context) -> None:
    """Monitor events already stored (catching up): no changes are answered for them."""
    if not events:
        return
    with MONITOR_LOCK:
        monitor, previous = live.monitor, live.last
        for event in events:
            monitor.ingest(context.labeling.label(event, previous))
            previous = event
    live.steps += len(events)
    live.next_step = events[-1]["step"] + 1
    live.last = previous


def snapshot_fits(state: Any, context: Context) -> bool:
    return (isinstance(state, dict) and state.get("format") == STATE_FORMAT
            and state.get("versions") == context.versions_key
            and isinstance(state.get("monitor"), dict)
            and type(state.get("steps")) is int and type(state.get("next_step")) is int
            and 0 <= state["steps"] <= state["next_step"])


def from_snapshot(session_pk: int, state: dict, context: Context) -> LiveMonitor | None:
    try:
        with MONITOR_LOCK:
            monitor = FastSessionMonitor.from_json(context.ruleset, state["monitor"],
                                                   witnesses=False)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # a state this code cannot read: the session is rebuilt
    counts = state.get("violations")
    counts = {k: v for k, v in counts.items() if type(v) is int} if isinstance(
        counts, dict) else {}
    return LiveMonitor(session_pk, context.versions_key, monitor, counts, state["steps"],
                       state["next_step"])


@dataclass
class Restored:
    live: LiveMonitor
    rebuilt: bool          # replayed from the first event: no snapshot fitted
    behind_snapshot: int   # events monitored after the snapshot it was restored from, or 0


def bring_up_to_date(session_pk: int, steps: int, context: Context, *,
                     live: LiveMonitor | None, after_live: list[dict] | None,
                     state: Any = NotImplemented) -> Restored:
    """The session's monitor over all its stored events (``steps`` of them, as the session row
    says): ``live`` (this process's, if any) with the events stored after it (``after_live``:
    those from ``live.next_step`` on, at most ``gap_limit()`` of them); else the
    snapshot (``state``, read here unless given) with the events after it; else a replay of
    every event."""
    restored = None
    if live is not None and after_live is not None and live.pk == session_pk and (
            len(after_live) < gap_limit()) and steps - len(after_live) == live.steps:
        feed_stored(live, after_live, context)
        restored = Restored(live, False, 0)
    if restored is None:
        if state is NotImplemented:
            state = storage.read_state(session_pk)
        if snapshot_fits(state, context):
            tail = storage.read_events(session_pk, state["next_step"])
            if steps - len(tail) == state["steps"]:
                loaded = from_snapshot(session_pk, state, context)
                if loaded is not None:
                    if context.labeling.labelers and state["steps"]:
                        loaded.last = storage.event_before(session_pk, state["next_step"])
                    feed_stored(loaded, tail, context)
                    restored = Restored(loaded, False, len(tail))
    if restored is None:
        events = storage.read_events(session_pk, 0) if steps else []
        rebuilt = LiveMonitor(session_pk, context.versions_key,
                              FastSessionMonitor(context.ruleset, witnesses=False), {})
        feed_stored(rebuilt, events, context)
        restored = Restored(rebuilt, steps > 0, 0)
    found = restored.live
    if found.last is None and found.steps and context.labeling.labelers:
        found.last = storage.event_before(session_pk, found.next_step)  # for labelers that read it
    return restored


def snapshot_of(live: LiveMonitor) -> dict:
    """What ``monitor_state`` holds: the monitor after ``live``'s events (call after
    ``forget_history``: violations are counted, not listed)."""
    with MONITOR_LOCK:
        monitor = compact_state(live.monitor.to_json())
    return {"format": STATE_FORMAT, "versions": live.versions, "steps": live.steps,
            "next_step": live.next_step, "revision": uuid.uuid4().hex,
            "violations": dict(live.counts), "monitor": monitor}


def gap_limit() -> int:
    """How many events stored after this process's monitor are caught up from it; past that,
    the snapshot (at most ``SNAPSHOT_EVERY`` behind) is nearer."""
    return 2 * SNAPSHOT_EVERY
