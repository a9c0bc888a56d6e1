"""Requests on one session (or one conversation) apply in the order they arrived.

Owns: `Lanes`, one FIFO per key. A request takes its place in its lane synchronously, when it
is dispatched (before any await), so arrival order is the order of effects even when the work
runs on worker threads; requests on other keys never wait for it.
`earlier()`, taken at dispatch too, waits for every request in a lane then, holding none: a
read across lanes (ctx/why, the lists) answers after what arrived before it.
Must not: run work itself (the caller awaits its turn, then runs).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Hashable


class Lanes:
    def __init__(self) -> None:
        self._tails: dict[Hashable, asyncio.Future[None]] = {}

    @contextlib.asynccontextmanager
    async def turn(self, key: Hashable) -> AsyncIterator[None]:
        """Wait for the requests on `key` that arrived earlier, then hold the lane.

        The place is taken when the context is entered; `async with lanes.turn(k)` must be the
        first await of the request for arrival order to hold."""
        loop = asyncio.get_running_loop()
        previous = self._tails.get(key)
        mine: asyncio.Future[None] = loop.create_future()
        self._tails[key] = mine
        try:
            if previous is not None and not previous.done():
                await asyncio.shield(previous)
            yield
        finally:
            if previous is not None and not previous.done():
                # cancelled while waiting: the next request must still wait for the earlier one
                previous.add_done_callback(lambda _: mine.done() or mine.set_result(None))
            else:
                mine.set_result(None)
            if self._tails.get(key) is mine and mine.done():
                del self._tails[key]

    def earlier(self) -> Awaitable[None]:
        """Every request in a lane now (arrived before the caller), to await: the lanes are
        read here, synchronously, so call it when the request is dispatched."""
        return _all_done([tail for tail in self._tails.values() if not tail.done()])


async def _all_done(tails: list[asyncio.Future[None]]) -> None:
    if tails:
        await asyncio.wait(tails)  # never cancels them: they are others' places
