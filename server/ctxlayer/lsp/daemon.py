"""Per-process services shared by every connection of one daemon.

Owns: `Daemon`, the one place for what lives as long as the process does, whatever the
transport (one stdio client, or many TCP clients):

- `tokenizers`: counting for every model behind one lock (a CountCache is not thread-safe);
- `workspaces`: live workspaces by root, shared by the connections open on the same root;
- `services`: named singletons that handler modules add (the sessions helper puts its store
  here with `daemon.service("sessions", factory)`), closed when the daemon stops;
- `state_dir`: where the daemon keeps files (TCP token, sessions database).

Per-connection state (initialization options, config, the connection's workspace) lives on
the `CtxServer` (lsp/server.py), not here. Must not import handlers.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ctxlayer.core.tokens import CountCache
from ctxlayer.lsp.live import WorkspaceRegistry

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Work on fewer characters than this runs on the event loop: a thread hop costs more.
INLINE_CHARS = 4096


class GuardedCounter:
    """A Tokenizer that takes the daemon's counting lock for each count (for worker threads)."""

    __slots__ = ("cache", "lock", "name")

    def __init__(self, cache: CountCache, lock: threading.Lock) -> None:
        self.cache, self.lock, self.name = cache, lock, cache.name

    def count(self, text: str) -> int:
        with self.lock:
            return self.cache.count(text)


class Tokenizers:
    """Every count in the daemon goes through here, so the shared caches see one thread at a time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._loaded: set[str | None] = set()

    def guarded(self, model: str | None) -> GuardedCounter:
        """A counter safe to use from any thread (loads the encoding on first use: slow)."""
        from ctxlayer.tokenizers import counter_for

        return GuardedCounter(counter_for(model), self.lock)

    async def run(self, model: str | None, work: Callable[[Any], T], *, size: int) -> T:
        """Run `work(counter)`: inline when small and the lock is free, else on a thread."""
        if model in self._loaded and size <= INLINE_CHARS and self.lock.acquire(blocking=False):
            try:
                from ctxlayer.tokenizers import counter_for

                return work(counter_for(model))
            finally:
                self.lock.release()
        result = await asyncio.to_thread(lambda: work(self.guarded(model)))
        if model not in self._loaded:
            self._loaded.add(model)
            # An encoding is a dict of 100k-200k ranks: out of the collector's sight, a full
            # collection no longer walks it (that walk was the ctx/count p99).
            gc.freeze()
        return result


class Daemon:
    """What one daemon process shares between its connections (see the module docstring)."""

    def __init__(self, state_dir: Path, *, transport: str = "stdio") -> None:
        self.state_dir = state_dir
        self.transport = transport
        self.tokenizers = Tokenizers()
        self.workspaces = WorkspaceRegistry(self)
        self.services: dict[str, Any] = {}
        self._closers: list[Callable[[], Any]] = []

    def service(self, name: str, factory: Callable[[], T], close: Callable[[T], Any] | None = None) -> T:
        """The daemon-wide singleton `name`, created by `factory()` on first use."""
        if name not in self.services:
            obj = factory()
            self.services[name] = obj
            if close is not None:
                self._closers.append(lambda: close(obj))
        return self.services[name]

    def close(self) -> None:
        """Stop watchers and close services; safe to call twice."""
        self.workspaces.close_all()
        while self._closers:
            try:
                self._closers.pop()()
            except Exception:
                log.exception("closing a daemon service failed")


def default_state_dir() -> Path:
    """$CTXLAYER_STATE_DIR, else $XDG_STATE_HOME/ctxlayer, else ~/.local/state/ctxlayer."""
    if env := os.environ.get("CTXLAYER_STATE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ctxlayer"
