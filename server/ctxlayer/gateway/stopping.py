"""Stopping the gateway while requests are under way (SIGTERM to `ctxlayer gateway`, the
daemon's exit).

Owns: the requests under way (a middleware) and the streams being relayed (forward.py
registers them), and how each ends once the gateway has stopped taking connections: a
stream already flowing ends at once with its provider's error event, as a stream the
upstream cuts does (its client would wait for its end, however long); any other request has
STOP_GRACE seconds to be answered, then is answered 503 in its provider's shape, naming the
stop. Before, aiohttp waited 60 s for the handlers and 60 s more, and then cut a
streaming client's answer without a word ("incomplete chunked read").

Must not: answer a request whose answer has begun (its status went out): such a request is
only ever cut, after its error event where it could be written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator

import aiohttp
from aiohttp import web

from ctxlayer.gateway.errors import GatewayError, error_response
from ctxlayer.gateway.guard import format_of

log = logging.getLogger("ctxlayer.gateway")

#: seconds a request whose answer has not begun has, once the gateway stops, to be answered:
#: a provider already at work on a plain answer mostly gives it within a few seconds, and
#: whoever stops the gateway waits little longer (`docker stop` kills after 10 s)
STOP_GRACE = 5.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def stopped(what: str) -> GatewayError:
    """The error a request the stopping gateway cannot finish ends with."""
    return GatewayError(503, f"the gateway is stopping: {what} (send the request again once "
                             "it runs again)", code="gateway_stopping")


class GatewayStopping(Exception):
    """Put into the upstream reader of every stream being relayed when the gateway stops:
    the relay ends the stream with the provider's error event at once."""


class UnderWay:
    """The requests the gateway is serving (each its own task, as aiohttp runs them) and the
    streams it relays (by their upstream readers)."""

    def __init__(self) -> None:
        self.stopping = False
        self._tasks: set[asyncio.Task] = set()
        self._streaming: set[asyncio.Task] = set()  # their status went out: never answered
        self._cut: set[asyncio.Task] = set()
        self._readers: set[aiohttp.StreamReader] = set()

    def middleware(self) -> Callable:
        @web.middleware
        async def under_way(request: web.Request, handler: Handler) -> web.StreamResponse:
            if self.stopping:
                # come on a connection kept alive once the stop began: it would have gone to
                # the provider (and been paid for) only to be cut
                log.warning("%s %s: came while the gateway stops: answered 503",
                            request.method, ascii(request.path))
                return error_response(format_of(request), stopped("it takes no new request"))
            task = asyncio.current_task()
            assert task is not None  # aiohttp runs every request in a task
            self._tasks.add(task)
            try:
                return await handler(request)
            except asyncio.CancelledError:
                # cut short by `end`, its answer not begun: the client is told why; else the
                # client went away (or the stop cut an answer begun): nobody to tell
                if task not in self._cut or task in self._streaming:
                    raise
                task.uncancel()
                log.warning("%s %s: not answered within the stop's grace: answered 503",
                            request.method, ascii(request.path))
                return error_response(format_of(request), stopped(
                    f"no answer within the {STOP_GRACE:.0f} s it gives the requests under way"))
            finally:
                for held in (self._tasks, self._streaming, self._cut):
                    held.discard(task)

        return under_way

    @contextlib.contextmanager
    def streaming(self, reader: aiohttp.StreamReader) -> Iterator[None]:
        """While a stream whose status went out is relayed; one that begins once the gateway
        is stopping ends at once."""
        task = asyncio.current_task()
        if task in self._tasks:
            self._streaming.add(task)
        self._readers.add(reader)
        if self.stopping:
            reader.set_exception(GatewayStopping())
        try:
            yield
        finally:
            self._readers.discard(reader)

    def stop_streams(self) -> None:
        """End every stream being relayed, and every one that begins from now on. The
        reader's own exception is the one way into a relay waiting for the upstream's next
        chunk that costs its chunks nothing while the gateway runs."""
        self.stopping = True
        for reader in self._readers:
            if not reader.is_eof():  # one whose upstream ended is relayed to its end
                reader.set_exception(GatewayStopping())

    async def end(self, grace: float) -> None:
        """Wait up to ``grace`` seconds for the requests under way, then cut the others
        short (those not answering yet answer 503) and wait up to ``grace`` more for them."""
        if not self._tasks:
            return
        await asyncio.wait(set(self._tasks), timeout=grace)
        left = {task for task in self._tasks if not task.done()}  # with those come since
        for task in left:
            self._cut.add(task)
            task.cancel()
        if left:
            await asyncio.wait(left, timeout=grace)
