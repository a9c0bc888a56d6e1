"""Counting for every model of the process, behind one lock.

Owns: `Tokenizers`, the one way the daemon's faces count (a CountCache is not thread-safe, so
every count on a worker thread takes the lock, one count at a time: a long assembly of one
session lets the short counts of others in between its own).
Must not: know about connections or sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from ctxlayer.core.tokens import CountCache, encode_many

T = TypeVar("T")

#: Work on fewer characters than this runs on the event loop: a thread hop costs more.
INLINE_CHARS = 4096


#: seconds without a request before an encoding no request has asked for is built: the build
#: holds the interpreter for 40-120 ms in one call, and a request that came meanwhile waited
#: for all of it
QUIET_FOR = 0.5


#: seconds since another request ended before a big count takes a second core again: a chat
#: sending request after request (an agent's tool calls) keeps it to one meanwhile
ALONE_AFTER = 0.1


#: how long a thread may hold the GIL while another waits (Python's default is 5 ms): a worker
#: preparing a 10 MB request would otherwise make every small request of another chat, whose
#: handling on the event loop asks for the GIL many times, wait 5 ms each time
SWITCH_INTERVAL = 0.0005


def share_the_interpreter() -> None:
    """The process's GIL switch interval, set once by the State (the one place)."""
    sys.setswitchinterval(SWITCH_INTERVAL)


def keep_out_of_collections() -> None:
    """The one `gc.freeze()` of the process: what is alive now (a loaded encoding, a scanned
    workspace's caches) lives as long as the process, and a full collection that walks it
    again each time is what made the ctx/count p99. Called once each of those is built."""
    gc.freeze()


class GuardedCounter:
    """A Tokenizer that takes the counting lock for each count. On a worker thread it waits
    for the lock; on the event loop (a small request run inline) it never waits: while a
    worker holds the cache it counts with the encoding itself (stateless, so safe beside it)
    rather than stall the loop behind a long assembly.

    Its batch (`count_many`, a conversation's first request) counts outside the lock, with a
    second thread only while ``alone()``: two encoding threads on a two-core machine leave the
    event loop no core, and another chat's small request waited twice as long while a 10 MB
    body was counted; alone, a 5 MB body's count takes 0.6 of the time."""

    __slots__ = ("alone", "cache", "lock", "name")

    def __init__(self, cache: CountCache, lock: threading.Lock,
                 alone: Callable[[], bool] = lambda: False) -> None:
        self.cache, self.lock, self.name, self.alone = cache, lock, cache.name, alone

    @property
    def correction(self) -> float:
        return self.cache.correction

    def count(self, text: str) -> int:
        if self.lock.acquire(blocking=False) or not _on_loop() and self.lock.acquire():
            try:
                return self.cache.count(text)
            finally:
                self.lock.release()
        return self.cache.tokenizer.count(text)

    def count_many(self, texts: list[str]) -> list[int]:
        """Counts of many texts, kept; those the cache lacks are counted outside the lock, so
        a first request of 5 MB does not hold every other count of the process meanwhile."""
        if _on_loop():  # never threads, nor a wait, on the loop
            return [self.count(t) for t in texts]
        with self.lock:
            out, missing = self.cache.known(texts)
        if not missing:
            return out  # type: ignore[return-value]
        fresh = encode_many(self.cache.tokenizer, missing, self.alone)
        with self.lock:
            return self.cache.remember(texts, out, missing, fresh)


def _on_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class Tokenizers:
    """Every count of the process goes through here, so the shared caches see one thread at a
    time. Where a count runs is the requests table's to say (state/requests/place.py): this
    only says whether a small one may run on the loop (`can_inline`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._answering = 0  # requests under way (`answering`)
        self._answered_at = time.monotonic()  # when the last one ended
        self._guarded: dict[int, GuardedCounter] = {}
        self._loaded: set[str | None] = set()

    def guarded(self, model: str | None) -> GuardedCounter:
        """A counter safe to use from any thread. Off the loop, the first one of a model waits
        for its encoding (the first count would), so later small requests can run inline."""
        from ctxlayer.tokenizers import counter_for

        cache = counter_for(model)
        if model not in self._loaded and not _on_loop():
            cache.tokenizer.count("")  # waits for the encoding's build
            self.loaded(model)
        # one per count cache, so what remembers a counter (a trim's TrimCache) finds it again
        guarded = self._guarded.get(id(cache))
        if guarded is None or guarded.cache is not cache:
            guarded = self._guarded[id(cache)] = GuardedCounter(cache, self.lock, self.alone)
        return guarded

    def preload(self, models: Iterable[str | None]) -> None:
        """Start building the encodings of ``models``, one after the other in their order, on
        a thread of their own, and return at once: a server that will count with them builds
        them before its first request. The first now; the others once the server is quiet
        (`quiet`), since a build stops the event loop for tens of milliseconds."""
        from ctxlayer.tokenizers import preload_in_turn

        preload_in_turn(list(models), quiet=self.quiet)

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """Around a request (on the loop): while one is under way the server is not quiet."""
        self._answering += 1
        try:
            yield
        finally:
            self._answering -= 1
            self._answered_at = time.monotonic()

    def quiet(self) -> bool:
        """No request under way, and none ended within QUIET_FOR seconds (read from the
        encodings' thread: two plain values, each read whole)."""
        return self._answering == 0 and time.monotonic() - self._answered_at >= QUIET_FOR

    def alone(self) -> bool:
        """At most one request under way (the one counting), and no other ended within
        ALONE_AFTER seconds: a big count may take the second core (read from a counting thread,
        as `quiet` is)."""
        return self._answering <= 1 and time.monotonic() - self._answered_at >= ALONE_AFTER

    def can_inline(self, model: str | None, size: int) -> bool:
        """Whether work on `size` characters may run on the loop: its encoding is loaded (a
        build takes seconds) and it is small (a thread hop costs more)."""
        return model in self._loaded and size <= INLINE_CHARS

    def run_inline(self, model: str | None, work: Callable[[Any], T], size: int) -> tuple[bool, T | None]:
        """Run small work on the calling thread when the encoding is loaded and the lock is
        free; (False, None) when it must go to a worker."""
        if not self.can_inline(model, size):
            return False, None
        from ctxlayer.tokenizers import counter_for

        cache = counter_for(model)
        if self.lock.acquire(blocking=False):
            try:
                return True, work(cache)
            finally:
                self.lock.release()
        # A worker holds the cache: count these few characters with the encoding itself
        # (stateless, so safe beside it) rather than wait behind a long assembly.
        return True, work(cache.tokenizer)

    async def on_worker(self, model: str | None, work: Callable[[Any], T]) -> T:
        """`work(counter)` on a worker thread: only for the conversations of ctx/prepare, which
        place their own turns (state/conversations.py); requests are placed by their table."""
        return await asyncio.to_thread(lambda: work(self.guarded(model)))

    def loaded(self, model: str | None) -> None:
        if model not in self._loaded:
            self._loaded.add(model)
            # an encoding is a dict of 100k-200k ranks
            keep_out_of_collections()
