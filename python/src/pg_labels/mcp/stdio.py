"""The gateway's stdio transport (for a client that starts it): MCP's messages, one JSON text a
line, on the process's standard input and output, read and written by the event loop itself.

The MCP SDK's ``stdio_server`` reads each line and writes each message in a worker thread:
three hand-offs between threads per call, a good part of the latency the gateway added to a
call. Here the descriptors are watched by the event loop; the messages are parsed and
serialized by the SDK as before (its ``stdio_server`` is given the two streams). What the SDK
does with the descriptors is kept: while the gateway serves, fd 0 reads the null device and
fd 1 writes to standard error, so that nothing else in the process (a library's print, a child
that inherits them) reaches the wire, and both are restored at the end.

A line is at most ``limit`` bytes (``max_request_bytes``, the bound of an HTTP request's body),
its newline not counted: a longer one is skipped to its end, unread, and logged, whether it came
in pieces or whole in one read. While the client does not read its answers (the pipe and the
transport's buffer full), no request is read: what the gateway holds for a client that sends
and never reads is a few answers. Standard input or output that the event loop cannot watch (a
regular file) is served by the SDK's transport."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from mcp.server.stdio import stdio_server

log = logging.getLogger("pg_labels.mcp")

# how much is read at a time
CHUNK = 1 << 16


def _watchable(fd: int) -> bool:
    """Whether the event loop can watch ``fd``: a pipe, a socket or a terminal."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


class _Lines:
    """The lines of a stream, as text (invalid UTF-8 replaced, as the SDK reads them)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        limit: int,
        ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.reader = reader
        self.limit = limit
        # awaited before each line is handed on: until the answers written are read
        self.ready = ready
        self.buffer = bytearray()
        # where the next search for a newline starts, and whether an overlong line is skipped
        self.searched = 0
        self.skipping = False

    def _skipped(self) -> None:
        log.warning("stdio: a message longer than max_request_bytes (%d) was skipped", self.limit)

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            end = self.buffer.find(b"\n", self.searched)
            if end >= 0:
                line = bytes(self.buffer[: end + 1])
                del self.buffer[: end + 1]
                self.searched = 0
                if self.skipping:
                    self.skipping = False
                    continue
                # a line that came whole in one read is measured as one that came in pieces
                if end > self.limit:
                    self._skipped()
                    continue
                if self.ready is not None:
                    await self.ready()
                return line.decode("utf-8", errors="replace")
            self.searched = len(self.buffer)
            if len(self.buffer) > self.limit:
                if not self.skipping:
                    self._skipped()
                self.skipping = True
                self.buffer.clear()
                self.searched = 0
            chunk = await self.reader.read(CHUNK)
            if not chunk:
                if self.buffer and not self.skipping:
                    line = bytes(self.buffer)
                    self.buffer.clear()
                    return line.decode("utf-8", errors="replace")
                raise StopAsyncIteration
            self.buffer += chunk


class _Out:
    """What the SDK's ``stdio_server`` writes to: each message, then a flush (a drain)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()

    async def ready(self) -> None:
        """Until what was written to the client is below the pipe's high-water mark (at once
        unless the client stopped reading its answers): no request is read meanwhile, so a
        client that sends and never reads holds the gateway's memory to a few answers. A lost
        connection is the reader's to find."""
        with contextlib.suppress(ConnectionError):
            await self.writer.drain()


@contextlib.contextmanager
def _claimed() -> Any:
    """The wire's descriptors, private (close-on-exec) duplicates of fd 0 and 1, while fd 0
    reads the null device and fd 1 writes to standard error; restored at the end."""
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        os.close(wire_in)
        raise
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        yield wire_in, wire_out
    finally:
        for wire, fd in ((wire_in, 0), (wire_out, 1)):
            with contextlib.suppress(OSError):
                os.set_blocking(wire, True)
                os.dup2(wire, fd)
            with contextlib.suppress(OSError):
                os.close(wire)


@contextlib.asynccontextmanager
async def stdio_streams(limit: int) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's read and write streams of MCP's messages on stdin and stdout."""
    if not (_watchable(0) and _watchable(1)):
        async with stdio_server() as streams:
            yield streams
        return
    loop = asyncio.get_running_loop()
    with _claimed() as (wire_in, wire_out):
        reader = asyncio.StreamReader(limit=CHUNK)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader),
            os.fdopen(wire_in, "rb", buffering=0, closefd=False),
        )
        try:
            write_transport, protocol = await loop.connect_write_pipe(
                lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()),
                os.fdopen(wire_out, "wb", buffering=0, closefd=False),
            )
            try:
                writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
                out = _Out(writer)
                async with stdio_server(_Lines(reader, limit, out.ready), out) as streams:  # type: ignore[arg-type]
                    yield streams
            finally:
                write_transport.close()
        finally:
            read_transport.close()
