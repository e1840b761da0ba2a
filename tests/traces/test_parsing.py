"""An upload's file cut into batches (studio.traces.parsing), in this process and in a child
process: no database.  The batches hold every item of the parser after the checkpoint, in
order, serialised; the child process gives exactly the batches this process gives; its failures
come as the same errors."""

from __future__ import annotations

import errno
import io
import json
import marshal
import os
import random
import signal
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.traces import formats
from studio.traces.formats import LineError, OptionsError
from studio.traces.parsing import (
    BatchSizes,
    ParseFailed,
    ParseProcess,
    Row,
    batches,
    serialise,
    share_of,
)

from .data import data_file

SMALL = BatchSizes(first=3, events=40, bytes=16 * 1024 * 1024)


def _parsed(path, format="jsonl", options=None, skip=0, sizes=SMALL, shares=0):
    with open(path, "rb") as handle:
        items = formats.parse(format, handle, options or {}, name=path.name)
        return list(batches(items, handle, skip, sizes, shares=shares))


def _from_child(path, format="jsonl", options=None, skip=0, sizes=SMALL, shares=0):
    child = ParseProcess(path, format, options or {}, path.name, skip, sizes, shares)
    try:
        return list(child)
    finally:
        child.close()


def _plain(batch_list) -> list:
    """The batches as comparable values: a row without its event (a child does not send it)."""
    # Payloads compared as read back: marshal's bytes depend on how objects are shared.
    return [(b.start, b.position, b.payloads and [marshal.loads(p) for p in b.payloads], [
        (i.seq, i.line, i.session, i.step, i.event_id, i.tail, i.session_id, i.share, i.position)
        if isinstance(i, Row) else i for i in b.items]) for b in batch_list]


def _log(rng: random.Random, lines: int) -> bytes:
    """A JSONL log with bad lines, events the database refuses, and explicit steps."""
    out = []
    for number in range(lines):
        roll = rng.random()
        if roll < 0.05:
            out.append("{not json")
        elif roll < 0.08:
            out.append(json.dumps({"session": "s", "output": "nul \\u0000 here"}).replace(
                "\\\\u0000", "\\u0000"))
        elif roll < 0.1:
            out.append(json.dumps({"session": "s", "step": "two"}))
        else:
            event = {"session": f"s{rng.randrange(5)}", "output": {"n": number, "t": "a\tb"},
                     "labels": ["x"] if rng.random() < 0.5 else None}
            if rng.random() < 0.2:
                event["step"] = rng.randrange(1000)
            if rng.random() < 0.3:
                event["event_id"] = f"e{number}"
            out.append(json.dumps(event))
    return ("\n".join(out) + "\n").encode()


# ---------------------------------------------------------------------------------------------
# batches, against the parser's items

@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 120), st.integers(1, 8), st.integers(1, 50),
       st.integers(200, 5000))
def test_batches_hold_every_item_after_the_checkpoint_in_order(tmp_path_factory, seed, skip,
                                                                 first, most, most_bytes):
    path = tmp_path_factory.mktemp("log") / "log.jsonl"
    path.write_bytes(_log(random.Random(seed), 100))
    sizes = BatchSizes(first, most, most_bytes)
    got = _parsed(path, skip=skip, sizes=sizes)

    with open(path, "rb") as handle:
        expected = list(formats.parse("jsonl", handle))[skip:]
    flat = [item for batch in got for item in batch.items]
    assert len(flat) == len(expected)
    for item, want in zip(flat, expected):
        if isinstance(want, LineError):
            assert item == want
            continue
        tail, problem = serialise(want)
        if problem:
            assert item == LineError(want["line"], problem)
        else:
            assert (item.line, item.session, item.step, item.event_id, item.tail, item.event) == (
                want["line"], want["session"], want["step"], want["event_id"], tail, want)
    start, limit = skip, min(first, most)
    for batch in got:  # checkpoints follow on; each batch within its limits (one line each)
        assert batch.start == start and batch.items
        start += len(batch.items)
        rows = [i for i in batch.items if isinstance(i, Row)]
        assert [r.seq for r in rows] == [batch.items.index(r) for r in rows]
        assert len(rows) <= limit
        assert sum(len(r.tail) + 20 for r in rows[:-1]) < most_bytes
        limit = min(2 * limit, most)
    positions = [b.position for b in got]
    assert positions == sorted(positions) and (not got or positions[-1] == path.stat().st_size)


@pytest.mark.parametrize("shares", [1, 3])
def test_payloads_hold_what_monitoring_reads_of_each_row_by_share(tmp_path, shares):
    path = tmp_path / "log.jsonl"
    path.write_bytes(_log(random.Random(shares), 300))
    got = _parsed(path, shares=shares)
    for batch in got:
        payloads = [marshal.loads(p) for p in batch.payloads]
        rows = [i for i in batch.items if isinstance(i, Row)]
        assert sum(map(len, payloads)) == len(rows)
        for row in rows:
            event = row.event
            assert row.share == share_of(row.session, shares)
            assert payloads[row.share][row.position] == (
                event["lifeline"] or "", event["input"], event["output"], event["data"],
                event["labels"])
    assert len({row.share for b in got for row in b.items if isinstance(row, Row)}) == shares
    assert all(b.payloads is None for b in _parsed(path))  # none unless asked for


def test_a_value_marshal_cannot_write_leaves_its_batch_without_payloads():
    class Name(str):
        pass

    def event(line, output):
        return {"session": "s", "step": None, "lifeline": "", "timestamp": None, "input": None,
                "output": output, "data": {}, "labels": None, "event_id": None,
                "message": None, "line": line}

    items = [event(1, "a"), event(2, Name("b")), event(3, "c")]
    got = list(batches(items, io.BytesIO(), 0, BatchSizes(2, 2, 1 << 20), shares=2))
    assert [len(b.items) for b in got] == [2, 1]  # stored all the same
    assert got[0].payloads is None and got[1].payloads is not None


# ---------------------------------------------------------------------------------------------
# The child process gives the same batches

@pytest.mark.parametrize("name, format, options", [
    ("textworld.jsonl", "jsonl", None),
    ("agentdojo_hijacked.jsonl", "jsonl", None),
    ("2026-11-21T12-41-39-00-00_mock-tool-eval_Ca3ViYX28Wt9VrnsrYoDpR.eval", "inspect", None),
    ("2026-11-21T12-41-41-00-00_mock-tool-eval_LsEYy273xy4gbKk9Lam7QT.json", "inspect", None),
])
def test_a_child_process_gives_the_batches_of_the_shared_logs(name, format, options):
    path = data_file(f"inspect/{name}" if format == "inspect" else name)
    here = _parsed(path, format, options)
    assert len(here) >= 2
    assert _plain(_from_child(path, format, options)) == _plain(here)


@pytest.mark.parametrize("seed, skip, shares", [(1, 0, 0), (2, 37, 2), (3, 500, 3)])
def test_a_child_process_gives_the_batches_of_a_log_with_bad_lines(tmp_path, seed, skip,
                                                                     shares):
    path = tmp_path / "log.jsonl"
    path.write_bytes(_log(random.Random(seed), 400))
    here = _parsed(path, skip=skip, shares=shares)
    assert any(isinstance(i, LineError) for b in here for i in b.items) or skip >= 400
    got = _from_child(path, skip=skip, shares=shares)
    assert _plain(got) == _plain(here)
    assert all(i.event is None for b in got for i in b.items if isinstance(i, Row))


def test_a_batch_bigger_than_one_message_arrives_whole(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes("".join(json.dumps({"session": f"s{i % 3}", "output": i}) + "\n"
                             for i in range(5_500)).encode())
    sizes = BatchSizes(5_000, 5_000, 16 * 1024 * 1024)
    got = _from_child(path, sizes=sizes)
    assert [len(b.items) for b in got] == [5_000, 500]
    assert _plain(got) == _plain(_parsed(path, sizes=sizes))


# ---------------------------------------------------------------------------------------------
# Failures

def test_options_that_cannot_work_are_the_same_error_from_a_child(tmp_path):
    path = tmp_path / "log.csv"
    path.write_bytes(b"a,b\n1,2\n")
    with pytest.raises(OptionsError) as here:
        _parsed(path, "csv", {"session": "a", "nonsense": "b"})
    with pytest.raises(OptionsError) as there:
        _from_child(path, "csv", {"session": "a", "nonsense": "b"})
    assert (there.value.message, there.value.field) == (here.value.message, here.value.field)


def test_a_file_that_cannot_be_read_is_an_os_error(tmp_path):
    with pytest.raises(OSError) as caught:
        _from_child(tmp_path / "gone.jsonl")
    assert caught.value.errno == errno.ENOENT and caught.value.strerror


def test_a_child_killed_in_the_middle_is_reported(tmp_path):
    path = tmp_path / "log.jsonl"
    # Far more than the pipe holds, so the child is still at work when it is killed.
    path.write_bytes("".join(json.dumps({"session": "s", "output": "x" * 200}) + "\n"
                             for _ in range(40_000)).encode())
    child = ParseProcess(path, "jsonl", {}, path.name, 0, SMALL)
    try:
        batch_list = iter(child)
        next(batch_list)
        os.kill(child._child.pid, signal.SIGKILL)
        with pytest.raises(ParseFailed, match=r"went away \(exit status -9\)"):
            for _ in batch_list:
                pass
    finally:
        child.close()


def test_a_silent_child_is_given_up(tmp_path):
    class Silent(ParseProcess):
        program = ["-c", "import sys; sys.stdin.buffer.read()"]  # reads on, never answers
        ANSWER_SECONDS = 0.5

    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"session": "s", "input": "x"}\n')
    child = Silent(path, "jsonl", {}, path.name, 0, SMALL)
    try:
        with pytest.raises(ParseFailed, match="sent nothing for 0.5 s"):
            list(child)
    finally:
        child.close()
    assert child._child.returncode is not None


def test_closing_in_the_middle_ends_the_child(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"session": "s", "input": "x"}\n' * 50_000)
    child = ParseProcess(path, "jsonl", {}, path.name, 0, SMALL)
    next(iter(child))
    started = time.monotonic()
    child.close()
    # Killed at once: blocked on a full pipe, it would not notice its input closing, and
    # closing would wait 5 s for it before killing it.
    assert child._child.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 4


def test_a_child_that_cannot_start_is_a_parse_failure_not_a_file_error(tmp_path, monkeypatch):
    from studio.traces import parsing

    def no_fork(arguments):
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(parsing, "spawn", no_fork)
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"session": "s", "input": "x"}\n')
    with pytest.raises(ParseFailed, match="did not start"):  # the loader then parses in-process
        ParseProcess(path, "jsonl", {}, path.name, 0, SMALL)
