"""Requests on one session (or one conversation) apply in the order they arrived.

Owns: `Lanes`, one FIFO per key. A request takes its place in its lane synchronously, when it
is dispatched (before any await), so arrival order is the order of effects even when the work
runs on worker threads; requests on other keys never wait for it.
`read()`, entered at dispatch too, is a read across lanes (ctx/why, the lists, ctx/inspect):
it waits for every request then in the lanes it reads, so it answers the state after the
requests before it. A read of one session or one chat also holds back the requests that
arrive in its lanes after it (it answers before them); a list of the workspace holds back
none (`holds=False`): it waits for the slowest session's work before it (an assembly waiting
on the client's summarizer), and holding every lane behind that would stall the sessions and
chats that have nothing to do with it. Reads run beside each other and hold no lane.
Must not: run work itself (the caller awaits its turn, then runs).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Hashable

#: which lanes a read reads, by their keys
ReadsLane = Callable[[Hashable], bool]


class Lanes:
    def __init__(self) -> None:
        self._tails: dict[Hashable, asyncio.Future[None]] = {}
        #: the reads under way, each with the lanes it reads
        self._reads: dict[asyncio.Future[None], ReadsLane] = {}

    @contextlib.asynccontextmanager
    async def turn(self, key: Hashable) -> AsyncIterator[None]:
        """Wait for the requests on `key` that arrived earlier, and the reads of it, then hold
        the lane.

        The place is taken when the context is entered; `async with lanes.turn(k)` must be the
        first await of the request for arrival order to hold."""
        loop = asyncio.get_running_loop()
        previous = self._tails.get(key)
        reads = [read for read, reads_lane in self._reads.items() if reads_lane(key)]
        mine: asyncio.Future[None] = loop.create_future()
        self._tails[key] = mine
        try:
            if previous is not None and not previous.done():
                await asyncio.shield(previous)
            await _all_done(reads)
            yield
        finally:
            if previous is not None and not previous.done():
                # cancelled while waiting: the next request must still wait for the earlier one
                previous.add_done_callback(lambda _: mine.done() or mine.set_result(None))
            else:
                # the reads it waited for, a later request waits for by itself: they stay
                # listed until they are done
                mine.set_result(None)
            if self._tails.get(key) is mine and mine.done():
                del self._tails[key]

    @contextlib.asynccontextmanager
    async def read(self, reads_lane: ReadsLane, *, holds: bool = True) -> AsyncIterator[None]:
        """Wait for every request now in a lane the read reads; ``holds``: then hold back the
        requests that arrive in those lanes until the read is done (a read of a session sent
        between two appends counted the second one). A list holds none: it may wait long for
        one session, and another session's requests never wait for that. Enter it when the
        read is dispatched, as its first await."""
        loop = asyncio.get_running_loop()
        earlier = [tail for key, tail in self._tails.items()
                   if not tail.done() and reads_lane(key)]
        mine: asyncio.Future[None] = loop.create_future()
        if holds:
            self._reads[mine] = reads_lane
        try:
            await _all_done(earlier)
            yield
        finally:
            self._reads.pop(mine, None)
            mine.set_result(None)

async def _all_done(tails: list[asyncio.Future[None]]) -> None:
    if tails:
        await asyncio.wait(tails)  # never cancels them: they are others' places
