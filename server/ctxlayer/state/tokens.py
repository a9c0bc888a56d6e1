"""Counting for every model of the process, behind one lock.

Owns: `Tokenizers`, the one way the daemon's faces count (a CountCache is not thread-safe, so
every count on a worker thread takes the lock, one count at a time: a long assembly of one
session lets the short counts of others in between its own).
Must not: know about connections or sessions.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ctxlayer.core.tokens import CountCache

T = TypeVar("T")

#: Work on fewer characters than this runs on the event loop: a thread hop costs more.
INLINE_CHARS = 4096


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
    """A Tokenizer that takes the counting lock for each count (for worker threads)."""

    __slots__ = ("cache", "lock", "name")

    def __init__(self, cache: CountCache, lock: threading.Lock) -> None:
        self.cache, self.lock, self.name = cache, lock, cache.name

    def count(self, text: str) -> int:
        with self.lock:
            return self.cache.count(text)


class Tokenizers:
    """Every count of the process goes through here, so the shared caches see one thread at a
    time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._loaded: set[str | None] = set()

    def guarded(self, model: str | None) -> GuardedCounter:
        """A counter safe to use from any thread (loads the encoding on first use: slow)."""
        from ctxlayer.tokenizers import counter_for

        return GuardedCounter(counter_for(model), self.lock)

    def run_inline(self, model: str | None, work: Callable[[Any], T], size: int) -> tuple[bool, T | None]:
        """Run small work on the calling thread when the encoding is loaded and the lock is
        free; (False, None) when it must go to a worker."""
        if model not in self._loaded or size > INLINE_CHARS:
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

    async def run(self, model: str | None, work: Callable[[Any], T], *, size: int) -> T:
        """Run `work(counter)`: inline when small and the lock is free, else on a thread."""
        done, result = self.run_inline(model, work, size)
        if done:
            return result  # type: ignore[return-value]
        result = await asyncio.to_thread(lambda: work(self.guarded(model)))
        self.loaded(model)
        return result

    def loaded(self, model: str | None) -> None:
        if model not in self._loaded:
            self._loaded.add(model)
            # an encoding is a dict of 100k-200k ranks
            keep_out_of_collections()
