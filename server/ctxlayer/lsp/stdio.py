"""Serving one client over stdin/stdout.

Owns: keeping stdout for JSON-RPC only (fd 1 is moved aside and pointed at stderr, so a stray
print or a child process cannot corrupt the channel), an asyncio reader on stdin (a thread
feeding it when stdin cannot be polled, e.g. a regular file or /dev/null), and the process exit code
(0 after shutdown + exit, 1 otherwise).
"""

from __future__ import annotations

import asyncio
import logging
import os
import selectors
import signal
import sys
import threading
from typing import BinaryIO

from ctxlayer.ending import run_to_end
from ctxlayer.lsp.dispatch import register_all
from ctxlayer.lsp.logs import client_logs
from ctxlayer.lsp.overrides import shut_down
from ctxlayer.lsp.server import CtxServer
from ctxlayer.lsp.transport import LINE_LIMIT, Connection
from ctxlayer.state import State

log = logging.getLogger(__name__)


class PipeWriter:
    """pygls' writer interface over the saved stdout: whole frames, flushed at once."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream

    def write(self, data: bytes) -> None:
        self.stream.write(data)
        self.stream.flush()

    def close(self) -> None:
        try:
            self.stream.close()
        except OSError:
            pass


def claim_stdout() -> BinaryIO:
    """The JSON-RPC output stream; from now on fd 1 and sys.stdout are stderr."""
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "wb", buffering=1 << 16)


def pollable(fd: int) -> bool:
    """Whether the event loop can watch `fd`. connect_read_pipe refuses a regular file at
    once, but takes any character device and only registers it in a later callback: for
    /dev/null (stdin under nohup or a service manager) epoll says EPERM there, where no
    one catches it, and the daemon waited forever for a line that never came."""
    try:
        with selectors.DefaultSelector() as probe:
            probe.register(fd, selectors.EVENT_READ)
    except (ValueError, OSError):
        return False
    return True


async def stdin_reader(stream: BinaryIO) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    if pollable(stream.fileno()):
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stream)
            return reader
        except (ValueError, OSError):  # a regular file: epoll cannot watch it
            pass

    def pump() -> None:
        fd = stream.fileno()
        while chunk := os.read(fd, 1 << 16):
            loop.call_soon_threadsafe(reader.feed_data, chunk)
        loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="stdin", daemon=True).start()
    return reader


async def serve(state: State, stdin: BinaryIO, stdout: BinaryIO) -> int:
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[int] = loop.create_future()

    def on_end(code: int) -> None:
        if not ended.done():
            ended.set_result(code)

    server = CtxServer(state, on_end=on_end)
    register_all(server)
    client_logs.loop = loop
    client_logs.servers.add(server)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_end, 0)
    state.serving()
    reader = await stdin_reader(stdin)
    connection = Connection(server, reader, PipeWriter(stdout))
    reading = asyncio.ensure_future(connection.run())
    try:
        await asyncio.wait([reading, ended], return_when=asyncio.FIRST_COMPLETED)
        if not ended.done():  # the client closed stdin without `exit`
            log.info("stdin closed")
            server.end(0 if shut_down(server.protocol) else 1)
        return ended.result()
    finally:
        client_logs.servers.discard(server)
        reading.cancel()
        await state.stop_gateway()
        state.close()


def run(state: State) -> int:
    stdout = claim_stdout()
    return run_to_end(serve(state, sys.stdin.buffer, stdout))
