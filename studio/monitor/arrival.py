"""Monitoring an upload's sessions while their events arrive (no Django).

``ArrivalMonitor`` labels and monitors rows in the order a load commits them and, at the end,
gives each session's results as an audit stores them.  ``studio.audits.intake`` decides which
sessions that is exact for and stores the results; this module only follows the rows.

A big upload's monitoring runs in child processes (``MonitorProcess``; this module is their
program: ``python -m studio.monitor.arrival``) that share its sessions out
(``MonitorProcesses``).  Python runs one thread at a time in a process: in processes of their
own, labelling and monitoring use whatever core is free instead of taking turns with the parser
and the writer.  A child reads messages as soon as they come (a thread of its own), so the
writer never waits for it; it exits when its input closes, also when its parent was killed.
"""

from __future__ import annotations

import gc
import marshal
import os
import queue
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from studio.bulkwork import BULK_THRESHOLDS
from studio.childprocess import receive, send, spawn, stop
from studio.labeling import labeling_from_snapshot
from studio.logic.events import monitor_event

from .fast import FastSessionMonitor
from .results import StoredResult, WitnessText, copy_texts, session_results
from .session import RuleSet

# Sessions monitored at once; a session opened beyond it is left to the audit's batches, which
# bounds memory.
MAX_OPEN_SESSIONS = 20_000


@dataclass
class _Open:
    """A session being monitored: its monitor, the last event (``prev``) and its steps."""

    monitor: FastSessionMonitor
    previous: dict | None = None
    steps: list = field(default_factory=list)


class ArrivalMonitor:
    """Follows committed rows ``(session id, step, lifeline, input, output, data, labels)``.

    A session is followed only while it is sure to give what an audit of its stored events
    gives: it had no events before its first rows here, and its steps come in increasing order.
    Any other session is dropped (``excluded``) for good."""

    def __init__(self, rules: list[tuple[str, str]], labelers: list[dict]):
        self.ruleset = RuleSet(rules)
        self.labeling = labeling_from_snapshot(labelers)
        self.open: dict[int, _Open] = {}
        self.excluded: set[int] = set()

    def observe(self, rows: list[tuple], stored_before: dict[int, int | None]) -> None:
        """Rows just committed, in file order; ``stored_before``: each session's last step
        stored before them (None when it had none)."""
        label = self.labeling.label
        opened = self.open
        excluded = self.excluded
        checked: set[int] = set()
        for session_id, step, lifeline, input, output, data, labels in rows:
            state = opened.get(session_id)
            if session_id not in checked:
                checked.add(session_id)
                if session_id in excluded:
                    continue
                before = stored_before.get(session_id)
                fits = (before is None and state is None and len(opened) < MAX_OPEN_SESSIONS
                        ) or (state is not None and state.steps and before == state.steps[-1])
                if not fits:
                    self._exclude(session_id)
                    continue
                if state is None:
                    state = opened[session_id] = _Open(
                        FastSessionMonitor(self.ruleset, witnesses=True))
            elif state is None:
                continue  # excluded earlier in these rows
            if state.steps and step <= state.steps[-1]:
                self._exclude(session_id)
                continue
            event = monitor_event(session_id, step, lifeline, input, output, data, labels)
            state.monitor.ingest(label(event, state.previous))
            state.previous = event
            state.steps.append(step)

    def _exclude(self, session_id: int) -> None:
        self.excluded.add(session_id)
        self.open.pop(session_id, None)

    def followed(self, scope: list[int]) -> dict[int, int]:
        """The sessions of ``scope`` still followed, with the number of steps monitored."""
        opened = self.open
        return {s: len(opened[s].steps) for s in scope if s in opened}

    def results(self, expected: dict[int, int],
                version_ids: list[int]) -> dict[int, list[StoredResult]]:
        """The results of the followed sessions whose stored step count is still the one given
        in ``expected`` (session id -> steps stored): nobody else added events meanwhile."""
        texts = WitnessText()
        out = {}
        for session_id, stored_steps in expected.items():
            state = self.open.get(session_id)
            if state is None or len(state.steps) != stored_steps:
                continue
            out[session_id] = session_results(session_id, state.monitor, state.steps,
                                              version_ids, texts)
        return out

    def result_texts(self, plan: list[tuple[int, int, list[int], list[int]]],
                     version_ids: list[int]) -> Iterator[tuple[bytes, bytes]]:
        """For each ``(run id, batch id, session ids, result ids)`` of ``plan``, the COPY texts
        of its sessions' results and their violations (``copy_texts``), as UTF-8: one result
        per session and rule version, the ids in that order.  Every session must be followed
        (the caller checked its steps with ``followed``)."""
        texts = WitnessText()
        for run_id, batch_id, session_ids, ids in plan:
            results = []
            for session_id in session_ids:
                state = self.open.get(session_id)
                if state is None:
                    raise ValueError(f"session {session_id} is not followed")
                results += session_results(session_id, state.monitor, state.steps, version_ids,
                                           texts)
            rows, violations = copy_texts(results, ids, run_id, batch_id)
            yield rows.encode(), violations.encode()


# ---------------------------------------------------------------------------------------------
# The child process (``studio.childprocess``: pickled messages over its standard streams).

class ArrivalFailed(Exception):
    """The child process failed or went away; its message says why."""


class MonitorProcess:
    """An ``ArrivalMonitor`` in a child process, with the same methods.  ``observe`` only
    sends (the child reads at once, so it does not wait for the monitoring); ``followed``,
    ``results`` and ``result_texts`` wait for the child to have monitored everything sent
    before them.  Failures of the child, and an answer that does not come in time, surface as
    ``ArrivalFailed``."""

    program = ["-m", "studio.monitor.arrival"]
    # How long an answer may take: the child may still be monitoring rows sent before the
    # question, so the wait grows with them - at a tenth of the child's measured speed.
    ANSWER_SECONDS = 60.0
    ANSWER_SECONDS_PER_ROW = 1e-4

    def __init__(self, rules: list[tuple[str, str]], labelers: list[dict]):
        self._child = spawn(self.program)
        self._lock = threading.Lock()  # the writing thread sends, the parsing thread asks
        self._rows_sent = 0
        self._broken: str | None = None  # why answers can no longer be read
        self._send(("start", rules, labelers))

    def _send(self, message) -> None:
        if self._broken is not None:
            raise ArrivalFailed(self._broken)
        with self._lock:
            try:
                send(self._child.stdin, message)
            except (OSError, ValueError) as exc:  # a broken pipe, or closed
                raise ArrivalFailed(f"the monitoring process went away ({exc})") from None

    def _ask(self, message):
        self._send(message)
        return self._answer()

    def observe(self, rows: list[tuple], stored_before: dict[int, int | None]) -> None:
        self._send(("observe", rows, stored_before))
        self._rows_sent += len(rows)

    def observe_payload(self, payload: bytes, picks: list[tuple[int, int, int]],
                        stored_before: dict[int, int | None]) -> None:
        """``observe`` of rows the child reads itself: ``payload`` is a list of
        ``(lifeline, input, output, data, labels)`` in marshal's format, and the rows are
        ``(session_id, step, *payload[place])`` for each ``(place, session_id, step)`` of
        ``picks``."""
        self._send(("observe_payload", payload, picks, stored_before))
        self._rows_sent += len(picks)

    def followed(self, scope: list[int]) -> dict[int, int]:
        return self._ask(("followed", scope))

    def results(self, expected: dict[int, int],
                version_ids: list[int]) -> dict[int, list[StoredResult]]:
        return self._ask(("results", expected, version_ids))

    def result_texts(self, plan: list[tuple[int, int, list[int], list[int]]],
                     version_ids: list[int]) -> Iterator[tuple[bytes, bytes]]:
        """As ``ArrivalMonitor.result_texts``, each batch's texts as the child makes them: the
        child works on the next batch while the caller stores this one.  The child is asked at
        once, before the first texts are read."""
        self._send(("result_texts", plan, version_ids))
        return self._texts(len(plan))

    def _texts(self, count: int) -> Iterator[tuple[bytes, bytes]]:
        for _ in range(count):
            yield self._answer()
        self._answer()  # the end of the stream

    def _answer(self):
        wait = self.ANSWER_SECONDS + self.ANSWER_SECONDS_PER_ROW * self._rows_sent
        try:
            answer = receive(self._child.stdout, time.monotonic() + wait)
        except TimeoutError:
            # A message may be half read: nothing more can be read from this child.
            self._broken = f"the monitoring process did not answer within {wait:.0f} s"
            raise ArrivalFailed(self._broken) from None
        if answer is None:
            raise ArrivalFailed("the monitoring process went away "
                                f"(exit status {self._child.wait()})")
        kind, value = answer
        if kind == "failed":
            raise ArrivalFailed(value)
        return value

    def close(self) -> None:
        """End the child (at once: nothing it holds is needed any more)."""
        stop(self._child)


class MonitorProcesses:
    """``MonitorProcess`` children sharing an upload's sessions out, with the same methods:
    the monitoring of a big upload is the slowest part of its load, and sessions are monitored
    independently of each other, so several children use several cores.  The rows come cut
    into one payload per child (``observe_payloads``, the loader decides which child follows a
    session); which child follows which is learnt from ``followed``, which ``result_texts``
    needs first."""

    def __init__(self, rules: list[tuple[str, str]], labelers: list[dict], count: int,
                 process: type[MonitorProcess] = MonitorProcess):
        self.children: list[MonitorProcess] = []
        self._holder: dict[int, MonitorProcess] = {}
        try:
            for _ in range(count):
                self.children.append(process(rules, labelers))
        except BaseException:
            self.close()
            raise

    def observe_payloads(self, payloads: list[bytes], picks: list[list[tuple[int, int, int]]],
                         stored_before: dict[int, int | None]) -> None:
        """Child ``i`` gets ``payloads[i]`` and ``picks[i]`` (``MonitorProcess.observe_payload``);
        a child keeps following the sessions it was first given."""
        for child, payload, picked in zip(self.children, payloads, picks, strict=True):
            if picked:
                child.observe_payload(payload, picked, stored_before)

    def followed(self, scope: list[int]) -> dict[int, int]:
        for child in self.children:  # asked at once, so that they look at the same time
            child._send(("followed", scope))
        found: dict[int, int] = {}
        self._holder = {}
        for child in self.children:  # every child answers, so none is left with an answer
            theirs = child._answer()
            found.update(theirs)
            self._holder.update(dict.fromkeys(theirs, child))
        return found

    def results(self, expected: dict[int, int],
                version_ids: list[int]) -> dict[int, list[StoredResult]]:
        found = {}
        for child in self.children:  # each gives the results of the sessions it follows
            found.update(child.results(expected, version_ids))
        return found

    def result_texts(self, plan: list[tuple[int, int, list[int], list[int]]],
                     version_ids: list[int]) -> Iterator[tuple[bytes, bytes]]:
        """As ``ArrivalMonitor.result_texts``, but one pair of texts per child and batch, the
        children working at once.  Every session must have been ``followed``."""
        width = len(version_ids)
        first = self.children[0]  # a session nobody follows goes there, to be refused
        plans: dict[MonitorProcess, list] = {child: [] for child in self.children}
        for run_id, batch_id, session_ids, ids in plan:
            parts: dict[MonitorProcess, tuple[list, list]] = {
                child: ([], []) for child in self.children}
            for position, session_id in enumerate(session_ids):
                sessions, their_ids = parts[self._holder.get(session_id, first)]
                sessions.append(session_id)
                their_ids += ids[position * width:(position + 1) * width]
            for child, (sessions, their_ids) in parts.items():
                plans[child].append((run_id, batch_id, sessions, their_ids))
        streams = [child.result_texts(plans[child], version_ids) for child in self.children]
        for _ in plan:
            for stream in streams:
                yield next(stream)
        for stream in streams:
            next(stream, None)  # the end of each child's stream

    def close(self) -> None:
        for child in self.children:
            child.close()


def _serve(inbox: queue.SimpleQueue, answers) -> None:
    """The child's work: messages in order from ``inbox``.  After a failure it only answers
    the questions, each with why it failed."""
    monitor: ArrivalMonitor | None = None
    failure: str | None = None
    while True:
        message = inbox.get()
        kind = message[0]
        if kind in ("followed", "results", "result_texts"):
            if failure is not None or monitor is None:
                send(answers, ("failed", failure or "the monitoring process was not started"))
                continue
            try:
                if kind == "result_texts":  # a stream: each batch's texts, then the end
                    for texts in monitor.result_texts(*message[1:]):
                        send(answers, ("ok", texts))
                    value = None
                else:
                    value = getattr(monitor, kind)(*message[1:])
            except Exception as exc:  # noqa: BLE001 - reported to the parent, which falls back
                failure = f"{type(exc).__name__}: {exc}"
                send(answers, ("failed", failure))
                continue
            send(answers, ("ok", value))
            continue
        if failure is not None:
            continue
        try:
            if kind == "start":
                monitor = ArrivalMonitor(*message[1:])
            elif kind == "observe" and monitor is not None:
                monitor.observe(*message[1:])
            elif kind == "observe_payload" and monitor is not None:
                payload, picks, stored_before = message[1:]
                values = marshal.loads(payload)
                monitor.observe([(session_id, step, *values[place])
                                 for place, session_id, step in picks], stored_before)
        except Exception as exc:  # noqa: BLE001 - reported when the parent asks
            failure = f"{type(exc).__name__}: {exc}"


def main() -> None:
    gc.set_threshold(*BULK_THRESHOLDS)  # this process only ever does bulk work
    incoming, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but answers on the answer stream
    inbox: queue.SimpleQueue = queue.SimpleQueue()

    def read_all() -> None:
        # Read as fast as the parent writes, so it never waits for the monitoring; at the end
        # of the input (the parent closed it, or died) there is nobody left to answer.
        while (message := receive(incoming)) is not None:
            inbox.put(message)
        os._exit(0)

    threading.Thread(target=read_all, daemon=True).start()
    _serve(inbox, answers)


if __name__ == "__main__":
    main()
