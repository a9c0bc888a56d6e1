"""Helpers for the workspace tests: git in a hermetic environment, files, a recorder.

git runs with no system or global config (author set through the environment, see
conftest.py), so the tests never read the user's own git setup.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from gitrepo import GIT_ENV, git, write  # noqa: F401 (the tests import them from here)

from ctxlayer.config import WorkspaceConfig
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.workspace import Workspace

count = WordTokenizer().count


def make_ws(root: Path, home: Path, **cfg) -> Workspace:
    return Workspace(root, WorkspaceConfig(**cfg), count, home=home,
                     user_config_dir=home / ".config" / "ctxlayer")


class Recorder:
    """Collects on_change calls from the watcher thread; waits by polling a condition."""

    def __init__(self) -> None:
        self.calls: list[tuple[object, list[str]]] = []
        self._lock = threading.Lock()

    def __call__(self, segment, changed: list[str]) -> None:
        with self._lock:
            self.calls.append((segment, list(changed)))

    def snapshot(self) -> list[tuple[object, list[str]]]:
        with self._lock:
            return list(self.calls)

    def wait_for(self, predicate: Callable[[list], bool], timeout: float = 30.0) -> list:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            calls = self.snapshot()
            if predicate(calls):
                return calls
            time.sleep(0.02)
        raise AssertionError(f"condition not met within {timeout}s; calls: "
                             f"{[c for _, c in self.snapshot()]}")


def part(seg, name):
    """The named part of a segment."""
    return next(p for p in seg.parts if p.name == name)


def has(name, text, present=True):
    """A Recorder predicate: the latest segment's part `name` holds `text` (or not)."""
    def check(calls):
        return bool(calls) and (text in part(calls[-1][0], name).text) == present
    return check


@contextlib.contextmanager
def watching(ws: Workspace, *on_config: Callable) -> Iterator[Recorder]:
    """`ws` scanned and watched (its changes recorded by the Recorder yielded), then stopped."""
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec, *on_config)
    try:
        yield rec
    finally:
        ws.stop()
