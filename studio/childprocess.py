"""Helper processes for bulk work, and the messages they exchange with their parent (no Django).

Python runs one thread at a time in a process.  A big upload keeps several kinds of Python work
busy at once (parsing, writing to the database, monitoring), so some of it runs in child
processes of its own (``python -m MODULE``) that take the machine's other cores.  Messages both
ways are pickles behind an 8-byte length, over the child's standard input and output; each side
only ever unpickles what the other (its own parent or child) wrote.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import select
import struct
import subprocess
import sys
import time
from pathlib import Path

_LENGTH = struct.Struct(">Q")
# Linux's F_SETPIPE_SZ: a pipe of 1 MiB instead of 64 KiB moves a big message in fewer reads.
_SET_PIPE_SIZE = getattr(fcntl, "F_SETPIPE_SZ", 1031)
PIPE_BYTES = 1024 * 1024


def spawn(arguments: list[str]) -> subprocess.Popen:
    """``python *arguments`` (``["-m", MODULE]``) with this checkout importable, on unbuffered
    pipes: an answer is waited for with select(), which sees only the pipe, not a buffer."""
    root = str(Path(__file__).resolve().parents[1])
    python_path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    child = subprocess.Popen(
        [sys.executable, *arguments], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        bufsize=0, env={**os.environ, "PYTHONPATH": python_path})
    for pipe in (child.stdin, child.stdout):
        try:
            fcntl.fcntl(pipe.fileno(), _SET_PIPE_SIZE, PIPE_BYTES)
        except OSError:  # above the system's limit, or not Linux: the default size works too
            pass
    return child


def stop(child: subprocess.Popen) -> None:
    """Close the child's input (it exits at the end of it) and wait a moment; kill it if it does
    not go."""
    try:
        child.stdin.close()
    except OSError:
        pass
    try:
        child.wait(timeout=5)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
    child.stdout.close()


def send(stream, message) -> None:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    # A raw stream (stdout under PYTHONUNBUFFERED, as in many containers) may take only part of
    # a write, for instance when a signal interrupts a write to a full pipe: write the rest.
    for data in (_LENGTH.pack(len(payload)), payload):
        view = memoryview(data)
        while view:
            written = stream.write(view)
            view = view[len(view) if written is None else written:]
    stream.flush()


def read_exactly(stream, size: int, deadline: float | None = None) -> bytes:
    """``size`` bytes, or fewer only at the end of the stream (a raw stream's read may return
    part of what is asked).  With a ``deadline`` (``time.monotonic()``), ``stream`` is a raw
    pipe, and ``TimeoutError`` comes when nothing more arrives by then."""
    parts = []
    missing = size
    while missing:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([stream], [], [], left)[0]:
                raise TimeoutError
        more = stream.read(missing)
        if not more:
            break
        parts.append(more)
        missing -= len(more)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def receive(stream, deadline: float | None = None):
    """The next message, or None at the end of the stream."""
    head = read_exactly(stream, _LENGTH.size, deadline)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    payload = read_exactly(stream, size, deadline)
    if len(payload) < size:
        return None
    return pickle.loads(payload)
