"""This process's stdin and stdout as pipes read and written on the event loop, for the MCP SDK's
``stdio_server``.

The SDK's own stdio transport reads each line and writes each message through a worker thread
(``anyio.wrap_file``): two thread hand-offs a message, which were the largest part of the
gateway's own CPU per tool call and, with the GIL passed between threads, of its latency tail.
Here the lines are read and written by asyncio's pipe transports instead: no thread.

``claimed_stdio()`` takes stdin and stdout over as the SDK does while it serves - file
descriptor 0 reads the null device and 1 writes to stderr, so a stray ``print`` or a child
process cannot write into the protocol - and gives both back on leaving.  It yields None when
they are not pipes or sockets (a terminal, a regular file) or the loop is not asyncio's: the SDK's
own transport serves then.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator

# A message is one line: the longest one read (an upstream's result may be large).  Reading
# stops with an error past it rather than holding an unbounded line.
LINE_LIMIT = 256 * 1024 * 1024


class PipeLines:
    """The lines of a pipe (text, with their newline), as ``async for`` reads them."""

    def __init__(self, reader: asyncio.StreamReader):
        self._reader = reader

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", "replace")


class PipeWriter:
    """Text written to a pipe; ``flush`` waits while the reader is behind (back-pressure)."""

    def __init__(self, writer: asyncio.StreamWriter):
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.asynccontextmanager
async def claimed_stdio() -> AsyncIterator[tuple[PipeLines, PipeWriter] | None]:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:   # another event loop (trio): the SDK's transport
        loop = None
    if loop is None or not (_is_pipe(0) and _is_pipe(1)):
        yield None
        return
    saved_in, saved_out = os.dup(0), os.dup(1)
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    transports: list[asyncio.BaseTransport] = []
    try:
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0))
        transports.append(read_transport)
        write_transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0))
        transports.append(write_transport)
        yield PipeLines(reader), PipeWriter(asyncio.StreamWriter(write_transport, protocol,
                                                                 None, loop))
    finally:
        for transport in transports:
            transport.close()   # closes the wire's descriptors
        # The transports made the pipes non-blocking, and 0 and 1 share that with the wire.
        os.set_blocking(saved_in, True)
        os.set_blocking(saved_out, True)
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
