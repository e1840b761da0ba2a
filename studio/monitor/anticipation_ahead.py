"""Anticipation off the request path (issue 27, item 4): searches made ahead, and later.

``BackgroundSearches`` is one daemon thread per process that decides the states requests met
undecided (``Anticipator.not_yet`` hands them here): each state once however many requests ask
(coalesced while queued or running), holding the monitors' lock but letting go of it every few
dozen steps of a search (for as long as the slice took), so a request waits for at most one
such slice, never for a search, and the thread takes at most about half of the process's time.

``reachable`` lists the states a rule's monitor reaches from its start (breadth first, over the
steps its atoms and data atoms allow, up to a bound); ``warm`` decides them, so that the states
sessions usually meet are known before any request meets them.  Pure Python.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .anticipation import Anticipator

# Per rule, at most this many states searched ahead, and rules with more atoms than this are
# searched from their start only (2^atoms letters a state).
WARM_STATES = 200
WARM_ATOMS = 6
PAUSE_STEPS = 64
# A search holding the lock lets go of it this long at each pause (``review.PAUSE_EVERY``).
PAUSE_SECONDS = 0.0005


def _letters(names: tuple[str, ...]) -> Iterator[frozenset]:
    for n in range(len(names) + 1):
        for chosen in itertools.combinations(names, n):
            yield frozenset(chosen)


def reachable(anticipator: Anticipator, i: int, limit: int = WARM_STATES,
              atoms_limit: int = WARM_ATOMS, pause: Callable | None = None
              ) -> list[tuple[Any, tuple]]:
    """Up to ``limit`` (state, context) pairs of rule ``i``'s TRAC automaton reachable from its
    start, breadth first (the start first): the keys ``Anticipator`` decides.  ``pause``:
    called every ``PAUSE_STEPS`` automaton steps."""
    machines = anticipator.ruleset.machines[i]
    rule = machines.rule
    automaton = machines.trac
    frames = anticipator.rules[i].frames
    prev_frames = anticipator.frames_prev[i]
    start_context = prev_frames.initial if prev_frames is not None else ()
    start = (automaton.initial, start_context)
    found = [start]
    seen = {start}
    names = tuple(sorted(rule.atoms))
    if len(names) > atoms_limit:
        return found
    frontier = collections.deque([start])
    steps = 0
    while frontier and len(found) < limit:
        state, context = frontier.popleft()
        if state.decided:
            continue
        if frames is not None:
            data_steps = frames.steps(context if prev_frames is not None else
                                      frames.initial)
        else:
            data_steps = ((frozenset(), ()),)
        for held, after in data_steps:
            for atoms in _letters(names):
                steps += 1
                if pause is not None and not steps % PAUSE_STEPS:
                    pause()
                nxt = automaton.step(state, atoms | held)
                key = (nxt, after if prev_frames is not None else ())
                if key in seen:
                    continue
                seen.add(key)
                found.append(key)
                frontier.append(key)
                if len(found) >= limit:
                    return found
    return found


def warm(anticipator: Anticipator, lock=None, limit: int = WARM_STATES,
         deadline: float | None = None, pause: Callable | None = None) -> int:
    """Decide the states of every rule ``reachable`` finds (those not known yet); returns how
    many were searched.  ``lock``: held while stepping automata and searching (the monitors'
    lock), ``deadline``: a ``time.monotonic()`` after which it stops."""
    lock = lock or threading.RLock()
    searched = 0
    for i in range(len(anticipator.rules)):
        with lock:
            states = reachable(anticipator, i, limit, pause=pause)
        for state, context in states:
            if deadline is not None and time.monotonic() > deadline:
                return searched
            with lock:
                if anticipator.known(i, state, context) is None:
                    anticipator.decide(i, state, context, pause=pause)
                    searched += 1
    anticipator.warmed = True
    return searched


class BackgroundSearches:
    """Decides handed-over states on one daemon thread, each once (see the module
    documentation).  ``lock``: the monitors' lock of the process."""

    def __init__(self, lock=None):
        self.lock = lock or threading.RLock()
        self._jobs: collections.deque = collections.deque()
        self._queued: set = set()
        self._condition = threading.Condition()
        self._thread: threading.Thread | None = None
        self.decided = 0             # states decided here
        self.threads: set[int] = set()   # the threads searches ran on (for tests)
        self._busy = 0
        self._slice = time.monotonic()   # when the current slice of work began

    # Called on the request's thread: cheap, never searches.
    def __call__(self, anticipator: Anticipator, i: int, state, context) -> None:
        self.submit((anticipator, i, state, context))

    def warm_later(self, anticipator: Anticipator, limit: int = WARM_STATES) -> None:
        """Search the rule set's reachable states on the background thread (once)."""
        if not anticipator.warmed:
            self.submit(("warm", anticipator, limit))

    def submit(self, job: tuple) -> None:
        with self._condition:
            if job in self._queued:
                return
            self._queued.add(job)
            self._jobs.append(job)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="anticipation",
                                                daemon=True)
                self._thread.start()
            self._condition.notify()

    def idle(self, timeout: float = 30.0) -> bool:
        """Wait until nothing is queued or running (tests, benchmarks); whether it is so."""
        end = time.monotonic() + timeout
        with self._condition:
            while self._jobs or self._busy:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._condition.wait(left)
        return True

    def _pause(self) -> None:
        """Let go of the lock and of the interpreter for as long as the slice of work since
        the last pause took (at least ``PAUSE_SECONDS``): the thread takes at most about half
        of the time requests of this process could use."""
        worked = time.monotonic() - self._slice
        self.lock.release()
        try:
            time.sleep(min(max(worked, PAUSE_SECONDS), 0.05))
        finally:
            self.lock.acquire()
            self._slice = time.monotonic()

    def _run_job(self, job: tuple) -> None:
        self.threads.add(threading.get_ident())
        self._slice = time.monotonic()
        if job[0] == "warm":
            self.decided += warm(job[1], self.lock, job[2], pause=self._pause)
            return
        anticipator, i, state, context = job
        with self.lock:
            if anticipator.known(i, state, context) is None:
                anticipator.decide(i, state, context, pause=self._pause)
                self.decided += 1

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._jobs:
                    if not self._condition.wait(60.0) and not self._jobs:
                        self._thread = None
                        return
                job = self._jobs.popleft()
                self._busy += 1
            try:
                self._run_job(job)
            except Exception:  # noqa: BLE001 - the state stays unknown; asked again later
                pass
            finally:
                with self._condition:
                    self._queued.discard(job)
                    self._busy -= 1
                    self._condition.notify_all()


__all__ = ["BackgroundSearches", "reachable", "warm"]
