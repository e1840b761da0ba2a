"""The audit on arrival's monitor (studio.monitor.arrival), without a database: the child process
gives exactly what the same monitor gives in this process, and its failures are reported."""

from __future__ import annotations

import io
import marshal
import random
import time

import pytest

from studio.childprocess import receive, send
from studio.monitor.arrival import ArrivalFailed, ArrivalMonitor, MonitorProcess, MonitorProcesses
from studio.monitor.results import copy_texts

RULES = [
    ("big_then_approved", "G(big -> F approved)"),
    ("consent_first", "!tool_call:pay W consent"),
    ("increase_approved", "G(data.amount > prev(data.amount) -> F approved)"),
    ("error_retry", "G(error -> X retry)"),
    ("logs_out", "F logout"),
]
LABELERS = [
    {"kind": "field", "atom": "big", "config": {"path": "data.amount", "op": ">", "value": 900}},
    {"kind": "regex", "atom": "consent", "config": {"path": "input", "pattern": "agree"}},
]
ATOMS = ["approved", "error", "retry", "logout", "other"]


def _batches(seed: int) -> list[tuple[list[tuple], dict]]:
    """Committed batches of rows for 8 sessions, interleaved; with ``stored_before`` as a load
    gives it.  Session 5 arrives with a step out of order and session 6 had an event before."""
    rng = random.Random(seed)
    last: dict[int, int | None] = {s: None for s in range(1, 9)}
    last[6] = 0
    next_step = {s: 0 if s != 6 else 1 for s in last}
    batches = []
    for _ in range(6):
        rows = []
        before = {}
        for _ in range(rng.randint(5, 25)):
            session = rng.randint(1, 8)
            step = next_step[session]
            if session == 5 and step == 4:
                step = 2  # out of order: the session is dropped
            next_step[session] += 1
            before.setdefault(session, last[session])
            amount = rng.choice([10, 500, 950, 2000])
            output = {"tool": "pay"} if rng.random() < 0.2 else "ok"
            if output != "ok":
                output = {"role": "assistant", "tool_calls": [{"name": "pay"}]}
            rows.append((session, step, "agent", rng.choice(["hi", "I agree", None]), output,
                         {"amount": amount}, rng.sample(ATOMS, rng.randint(0, 2))))
        for session, step, *_ in rows:
            last[session] = max(step, last[session] if last[session] is not None else -1)
        batches.append((rows, before))
    return batches


def _follow(monitor, batches) -> tuple[list[int], dict]:
    for rows, before in batches:
        monitor.observe(rows, before)
    scope = list(range(1, 10))
    followed = monitor.followed(scope)
    counts = {s: sum(1 for rows, _ in batches for row in rows if row[0] == s)
              for s in followed}
    assert followed == counts  # every row of a followed session was monitored
    candidates = list(followed)
    return candidates, monitor.results(counts, [11, 12, 13, 14, 15])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_child_process_gives_what_the_monitor_gives_here(seed):
    batches = _batches(seed)
    here = _follow(ArrivalMonitor(RULES, LABELERS), batches)
    child = MonitorProcess(RULES, LABELERS)
    try:
        there = _follow(child, batches)
    finally:
        child.close()
    assert here == there
    candidates, results = here
    assert 5 not in candidates and 6 not in candidates  # out of order; stored before
    assert set(results) == set(candidates) and len(candidates) >= 4
    assert any(r.verdict == "violated" for rs in results.values() for r in rs)


def _plan(sessions: list[int], versions: int) -> list[tuple]:
    """Two batches of the sessions, with result ids counting from 1000."""
    half = len(sessions) // 2
    ids = iter(range(1000, 1000 + versions * len(sessions)))
    return [(7, batch_id, part, [next(ids) for _ in range(versions * len(part))])
            for batch_id, part in ((70, sessions[:half]), (71, sessions[half:]))]


def test_result_texts_from_the_child_are_the_copy_texts_of_its_results():
    batches = _batches(5)
    versions = [11, 12, 13, 14, 15]
    here = ArrivalMonitor(RULES, LABELERS)
    candidates, results = _follow(here, batches)
    plan = _plan(candidates, len(versions))
    expected = [tuple(t.encode() for t in copy_texts(
        [r for s in part for r in results[s]], ids, run_id, batch_id))
        for run_id, batch_id, part, ids in plan]
    assert list(here.result_texts(plan, versions)) == expected
    child = MonitorProcess(RULES, LABELERS)
    try:
        _follow(child, batches)
        assert list(child.result_texts(plan, versions)) == expected
    finally:
        child.close()
    assert any(violations for _, violations in expected)


class _Payloads:
    """Hands children each batch cut into payloads, one per child, as the loader does."""

    def __init__(self, children: MonitorProcesses):
        self.children = children

    def observe(self, rows, before):
        count = len(self.children.children)
        values: list[list] = [[] for _ in range(count)]
        picks: list[list] = [[] for _ in range(count)]
        for session, step, *payload in rows:
            share = (session * 7) % count  # any split that keeps a session with one child
            picks[share].append((len(values[share]), session, step))
            values[share].append(tuple(payload))
        self.children.observe_payloads([marshal.dumps(v) for v in values], picks, before)

    def __getattr__(self, name):
        return getattr(self.children, name)


@pytest.mark.parametrize("count", [1, 2, 3])
def test_children_sharing_the_sessions_give_what_the_monitor_gives_here(count):
    batches = _batches(count + 10)
    here = _follow(ArrivalMonitor(RULES, LABELERS), batches)
    children = MonitorProcesses(RULES, LABELERS, count)
    try:
        there = _follow(_Payloads(children), batches)
    finally:
        children.close()
    assert sorted(here[0]) == sorted(there[0]) and here[1] == there[1]
    assert len(here[0]) >= 4


def test_children_sharing_the_sessions_hand_over_the_same_result_rows():
    batches = _batches(7)
    versions = [11, 12, 13, 14, 15]
    here = ArrivalMonitor(RULES, LABELERS)
    candidates, _ = _follow(here, batches)
    plan = _plan(candidates, len(versions))
    expected = list(here.result_texts(plan, versions))
    children = MonitorProcesses(RULES, LABELERS, 3)
    try:
        _follow(_Payloads(children), batches)
        got = list(children.result_texts(plan, versions))
        first = candidates[0]
        assert children.followed([first, 999]) == {first: _steps_of(batches, first)}
    finally:
        children.close()
    assert len(got) == 3 * len(plan)  # one pair of texts per child and batch
    for index, (rows, violations) in enumerate(expected):
        mine = got[3 * index:3 * index + 3]
        assert sorted(b"".join(r for r, _ in mine).splitlines()) == sorted(rows.splitlines())
        assert sorted(b"".join(v for _, v in mine).splitlines()) == sorted(
            violations.splitlines())
    assert any(violations for _, violations in expected)


def _steps_of(batches, session: int) -> int:
    return sum(1 for rows, _ in batches for row in rows if row[0] == session)


def test_a_child_failing_in_the_middle_of_its_result_texts_says_so():
    batches = _batches(6)
    child = MonitorProcess(RULES, LABELERS)
    try:
        candidates, _ = _follow(child, batches)
        plan = _plan(candidates, 5)
        plan[1] = (7, 71, [*plan[1][2], 999], plan[1][3])  # 999 was never followed
        texts = child.result_texts(plan, [11, 12, 13, 14, 15])
        next(texts)  # the first batch's texts came
        with pytest.raises(ArrivalFailed, match="session 999 is not followed"):
            next(texts)
    finally:
        child.close()


def test_a_session_with_events_stored_meanwhile_gets_no_results():
    batches = _batches(4)
    monitor = ArrivalMonitor(RULES, LABELERS)
    for rows, before in batches:
        monitor.observe(rows, before)
    candidates = list(monitor.followed(list(range(1, 10))))
    counts = {s: sum(1 for rows, _ in batches for row in rows if row[0] == s) for s in candidates}
    counts[candidates[0]] += 1  # another writer added an event
    assert set(monitor.results(counts, [1, 2, 3, 4, 5])) == set(candidates[1:])


def test_a_failure_in_the_child_is_reported_when_asked():
    child = MonitorProcess(RULES, LABELERS)
    try:
        child.observe([("not a row",)], {})  # cannot be unpacked: the child records why
        with pytest.raises(ArrivalFailed, match="ValueError"):
            child.followed([1])
    finally:
        child.close()


def test_a_child_that_cannot_start_its_rules_says_so():
    child = MonitorProcess([("bad", "G(")], [])
    try:
        with pytest.raises(ArrivalFailed):
            child.followed([1])
    finally:
        child.close()


def test_a_child_that_never_answers_is_given_up_after_its_time(monkeypatch):
    class Silent(MonitorProcess):
        program = ["-c", "import sys; sys.stdin.buffer.read()"]  # reads on, never answers
        ANSWER_SECONDS = 0.5
        ANSWER_SECONDS_PER_ROW = 0.01

    child = Silent(RULES, LABELERS)
    try:
        child.observe([(1, 0, "", None, None, {}, [])] * 50, {})  # 50 rows: 0.5 s more
        started = time.monotonic()
        with pytest.raises(ArrivalFailed, match="did not answer within 1 s"):
            child.followed([1])
        assert 0.9 < time.monotonic() - started < 10
        with pytest.raises(ArrivalFailed, match="did not answer"):  # and nothing after that
            child.observe([], {})
    finally:
        child.close()
    assert child._child.returncode is not None


def test_a_dead_child_is_reported_and_closing_ends_it():
    child = MonitorProcess(RULES, LABELERS)
    child._child.kill()
    child._child.wait()
    with pytest.raises(ArrivalFailed, match="went away"):
        child.observe([], {})
        child.followed([1])
    child.close()
    running = MonitorProcess(RULES, LABELERS)
    running.close()
    assert running._child.returncode == 0  # it saw its input end and left


class _Trickle(io.RawIOBase):
    """A raw stream that takes and gives at most ``chunk`` bytes a call, as a pipe interrupted
    by a signal may (stdout is raw under PYTHONUNBUFFERED)."""

    def __init__(self, chunk: int, data: bytes = b""):
        self.chunk = chunk
        self.data = bytearray(data)

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def write(self, b) -> int:
        taken = bytes(b[:self.chunk])
        self.data += taken
        return len(taken)

    def read(self, size: int = -1) -> bytes:
        size = len(self.data) if size < 0 else min(size, self.chunk)
        out = bytes(self.data[:size])
        del self.data[:size]
        return out


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_messages_survive_streams_that_move_part_of_a_write_or_read(chunk):
    message = ("results", {i: ["x" * (i % 97)] * 3 for i in range(2000)})
    stream = _Trickle(chunk)
    send(stream, message)
    send(stream, ("ok", None))
    reader = _Trickle(chunk, bytes(stream.data))
    assert receive(reader) == message
    assert receive(reader) == ("ok", None)
    assert receive(reader) is None  # the end of the stream
