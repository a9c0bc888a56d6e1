"""The file watcher: file events, filtered, debounced into batches.

Owns: choosing the event source, the debounce (a batch is flushed after `debounce` seconds of
quiet, or `max_wait` after its first event), and the worker thread that hands each batch to
`flush`. On Linux, when the caller says which folders to keep, the source is `inotify.py`: a
watch per kept folder, so ignored folders (node_modules) cost no watch, and new kept folders
are watched as they appear. Elsewhere (macOS FSEvents, Windows: one recursive handle, no
per-folder limit) it is a watchdog observer with its event filter (TOOLCHAIN.md: created /
closed-after-write / deleted / moved only, so bursts do not overflow the queue) and its
overflow detector (watchdog only LOGS "Inotify queue overflowed" on the `watchdog` logger: a
logging handler turns that into a full rescan). Knows nothing of segment parts: the Workspace
classifies the paths and decides which folders to keep.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from ctxlayer.workspace import inotify

log = logging.getLogger(__name__)

EVENT_FILTER: list[type[FileSystemEvent]] = [
    FileCreatedEvent, FileClosedEvent, FileDeletedEvent, FileMovedEvent,
    DirCreatedEvent, DirDeletedEvent, DirMovedEvent,
]
#: a batch with more paths than this is flushed as a full rescan instead
MAX_BATCH_PATHS = 5000

#: path -> True when its existence or name changed (created, deleted, moved), False when only
#: its content was written
Batch = dict[str, bool]
Flush = Callable[[Batch, bool], None]


class Debouncer:
    """Collects paths from any thread; one worker thread flushes them after a quiet period."""

    def __init__(self, flush: Flush, debounce_s: float, max_wait_s: float,
                 on_activity: Callable[[Batch], None] | None = None) -> None:
        self._flush = flush
        self._on_activity = on_activity
        self._debounce = debounce_s
        self._max_wait = max(max_wait_s, debounce_s)
        self._cond = threading.Condition()
        self._pending: Batch = {}
        self._full = False
        self._first = self._last = 0.0
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="ctxlayer-debounce", daemon=True)
        self._thread.start()

    def add(self, items: Batch, full: bool = False) -> None:
        if items and self._on_activity is not None:
            try:
                self._on_activity(items)
            except Exception:  # a failed prefetch must not lose the event
                log.exception("workspace prefetch failed")
        with self._cond:
            now = time.monotonic()
            if not self._pending and not self._full:
                self._first = now
            self._last = now
            if full or self._full or len(self._pending) + len(items) > MAX_BATCH_PATHS:
                self._full = True
                self._pending.clear()
            else:
                for path, structural in items.items():
                    self._pending[path] = self._pending.get(path, False) or structural
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and not self._pending and not self._full:
                    self._cond.wait()
                while not self._stopped:
                    now = time.monotonic()
                    deadline = min(self._last + self._debounce, self._first + self._max_wait)
                    if now >= deadline:
                        break
                    self._cond.wait(deadline - now)
                if self._stopped:
                    return
                batch, full = self._pending, self._full
                self._pending, self._full = {}, False
            try:
                self._flush(batch, full)
            except Exception:  # the worker must survive anything a refresh raises
                log.exception("workspace refresh failed")


class _Handler(FileSystemEventHandler):
    def __init__(self, debouncer: Debouncer, accept: Callable[[str], bool]) -> None:
        self._debouncer = debouncer
        self._accept = accept

    def on_any_event(self, event: FileSystemEvent) -> None:
        structural = not isinstance(event, FileClosedEvent)
        items: Batch = {}
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if not raw:
                continue
            path = raw if isinstance(raw, str) else raw.decode("utf-8", "surrogateescape")
            if self._accept(path):
                items[path] = structural
        if items:
            self._debouncer.add(items)


class _OverflowDetector(logging.Handler):
    def __init__(self, debouncer: Debouncer) -> None:
        super().__init__(level=logging.WARNING)
        self._debouncer = debouncer

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return
        if "overflow" in message.lower():
            self._debouncer.add({}, full=True)


class Watcher:
    """Watches `recursive` folders with their subfolders and `shallow` folders alone; calls
    `flush(batch, full)` on its worker thread, one call per debounced burst, and
    `on_activity(items)` on the reading thread as events arrive (it must be quick).

    `keep_folder(path)` (absolute) says whether a folder below a recursive root is watched;
    None watches them all. It is asked on the reading thread, for new folders too."""

    def __init__(self, recursive: list[Path], shallow: list[Path], flush: Flush,
                 accept: Callable[[str], bool], debounce_s: float, max_wait_s: float,
                 on_activity: Callable[[Batch], None] | None = None,
                 keep_folder: Callable[[str], bool] | None = None) -> None:
        self._debouncer = Debouncer(flush, debounce_s, max_wait_s, on_activity)
        self._accept = accept
        self._folders: inotify.FolderWatch | None = None
        self._observer = None
        self._detector: _OverflowDetector | None = None
        try:
            if keep_folder is not None and inotify.available():
                self._folders = inotify.FolderWatch(
                    recursive, shallow, keep_folder, self._items,
                    lambda: self._debouncer.add({}, full=True))
            else:
                self._start_observer(recursive, shallow)
        except Exception:
            self.stop()
            raise

    def _start_observer(self, recursive: list[Path], shallow: list[Path]) -> None:
        self._detector = _OverflowDetector(self._debouncer)
        wd_logger = logging.getLogger("watchdog")
        if wd_logger.getEffectiveLevel() > logging.WARNING:
            wd_logger.setLevel(logging.WARNING)
        wd_logger.addHandler(self._detector)
        self._observer = Observer()
        handler = _Handler(self._debouncer, self._accept)
        for folder in recursive:
            self._observer.schedule(handler, str(folder), recursive=True,
                                    event_filter=EVENT_FILTER)
        for folder in shallow:
            self._observer.schedule(handler, str(folder), recursive=False,
                                    event_filter=EVENT_FILTER)
        self._observer.start()

    def _items(self, items: inotify.Items) -> None:
        batch: Batch = {}
        for path, structural in items:
            if self._accept(path):
                batch[path] = batch.get(path, False) or structural
        if batch:
            self._debouncer.add(batch)

    def add_folders(self, recursive: list[Path], shallow: list[Path]) -> None:
        """Watch more folders (a repository appeared): as the constructor's arguments."""
        if self._folders is not None:
            self._folders.add(recursive, shallow)
            return
        if self._observer is not None:
            handler = _Handler(self._debouncer, self._accept)
            for folder, rec in [(f, True) for f in recursive] + [(f, False) for f in shallow]:
                if folder.is_dir():
                    self._observer.schedule(handler, str(folder), recursive=rec,
                                            event_filter=EVENT_FILTER)

    def follow_folders(self, folders: list[Path]) -> None:
        """Watch these folders if `keep_folder` now accepts them (the watchdog observer
        watches every folder already)."""
        if self._folders is not None:
            self._folders.follow(folders)

    def sync_folders(self) -> None:
        """Ask `keep_folder` again about every folder (after an ignore file changed)."""
        if self._folders is not None:
            self._folders.sync()

    def watch_count(self) -> int | None:
        """inotify watches held (None with the watchdog observer, which does not say)."""
        return self._folders.watch_count() if self._folders is not None else None

    def watched_folders(self) -> set[str] | None:
        return self._folders.watched() if self._folders is not None else None

    def stop(self) -> None:
        try:
            if self._folders is not None:
                self._folders.stop()
            if self._detector is not None:
                logging.getLogger("watchdog").removeHandler(self._detector)
            if self._observer is not None and self._observer.is_alive():
                self._observer.stop()
                self._observer.join(timeout=10)
        finally:
            self._debouncer.stop()
