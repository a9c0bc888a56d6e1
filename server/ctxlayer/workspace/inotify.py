"""Linux inotify, folder by folder: watch only the folders worth watching.

A recursive watch (watchdog's) puts an inotify watch on every folder below the root, ignored
ones included, so one large node_modules can use up the user's watches
(`fs.inotify.max_user_watches`) and flood the queue. Here each folder is watched on its own,
and a folder is descended into only when `keep(path)` says so; a folder created (or moved in)
later is watched as it appears, with the same question asked. A root or a folder watched alone
that is not there (deleted, or not made yet) is looked for once a second and watched when it
comes.

Owns: the inotify file descriptor (through libc, by ctypes), the map between watch
descriptors and folders, the reader thread, turning kernel events into `(path, structural)`
items (created / deleted / moved are structural, a close after writing is not), and reporting
a kernel queue overflow. Knows nothing of git, ignore rules or parts: `keep` decides.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import os
import select
import struct
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

log = logging.getLogger(__name__)

IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000

MASK = (IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)
#: how often a root or folder watched alone that is not there is looked for
LOOK_AGAIN_MS = 1000
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)
_READ_SIZE = 1 << 20

#: (path, structural) pairs, in event order
Items = list[tuple[str, bool]]


def available() -> bool:
    return _libc() is not None


_LIBC: ctypes.CDLL | None | bool = False


def _libc() -> ctypes.CDLL | None:
    global _LIBC
    if _LIBC is False:
        _LIBC = None
        name = ctypes.util.find_library("c") if os.uname().sysname == "Linux" else None
        if name:
            lib = ctypes.CDLL(name, use_errno=True)
            if hasattr(lib, "inotify_init1"):
                lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
                lib.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
                _LIBC = lib
    return _LIBC  # type: ignore[return-value]


class FolderWatch:
    """Watches `trees` (each folder, then every subfolder `keep` accepts) and `folders` (each
    alone); calls `on_items(items)` from its reader thread as events arrive and
    `on_overflow()` when the kernel dropped events. A missing folder is skipped."""

    def __init__(self, trees: Iterable[Path], folders: Iterable[Path],
                 keep: Callable[[str], bool], on_items: Callable[[Items], None],
                 on_overflow: Callable[[], None]) -> None:
        libc = _libc()
        if libc is None:
            raise OSError(errno.ENOSYS, "inotify is not available")
        self._libc = libc
        self._keep = keep
        self._on_items = on_items
        self._on_overflow = on_overflow
        self._lock = threading.Lock()
        self._paths: dict[int, str] = {}  # wd -> folder
        self._wds: dict[str, int] = {}  # folder -> wd
        self._trees: list[str] = [os.fsdecode(os.path.abspath(t)) for t in trees]
        self._alone: set[str] = {os.fsdecode(os.path.abspath(f)) for f in folders}
        #: roots and folders watched alone seen gone, looked for until they come back
        self._gone: set[str] = set()
        self.fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self.fd < 0:
            e = ctypes.get_errno()
            raise OSError(e, f"inotify_init1: {os.strerror(e)}")
        self._stop_r, self._stop_w = os.pipe()
        try:
            for folder in self._alone:
                self._add(folder)
            for tree in self._trees:
                self._add_tree(tree)
        except BaseException:
            self._close()
            raise
        self._thread = threading.Thread(target=self._run, name="ctxlayer-inotify", daemon=True)
        self._thread.start()

    # --- watches ------------------------------------------------------------------------------

    def watch_count(self) -> int:
        with self._lock:
            return len(self._wds)

    def watched(self) -> set[str]:
        with self._lock:
            return set(self._wds)

    def add(self, trees: Iterable[Path], folders: Iterable[Path]) -> None:
        """Watch more: `trees` with their kept subfolders, `folders` alone."""
        for f in folders:
            folder = os.fsdecode(os.path.abspath(f))
            self._alone.add(folder)
            self._add(folder)
        for t in trees:
            tree = os.fsdecode(os.path.abspath(t))
            if tree not in self._trees:
                self._trees.append(tree)
            self._add_tree(tree)

    def follow(self, folders: Iterable[Path]) -> None:
        """Watch folders below the trees that `keep` accepts from now on (a file read by name
        in an ignored folder), without walking the rest: for each, its highest folder not
        watched yet, with the subfolders `keep` accepts."""
        for f in folders:
            folder = os.fsdecode(os.path.abspath(f))
            tree = next((t for t in self._trees if folder.startswith(t + os.sep)), None)
            if tree is None:
                continue
            current = tree
            for name in folder[len(tree) + 1:].split(os.sep):
                with self._lock:
                    if current not in self._wds:  # its parent not watched: nothing to add to
                        break
                current = os.path.join(current, name)
                with self._lock:
                    if current in self._wds:
                        continue
                if (os.path.isdir(current) and not os.path.islink(current)
                        and self._keep(current)):
                    self._add_tree(current)
                break

    def sync(self) -> None:
        """Ask `keep` again about every folder below the trees: watch the folders it now
        accepts, drop the ones it no longer does (after an ignore file changed)."""
        wanted: set[str] = set(self._alone)
        for tree in self._trees:
            wanted |= self._walk(tree)
        with self._lock:
            stale = [f for f in self._wds if f not in wanted]
        for folder in stale:
            self._remove(folder)
        for folder in sorted(wanted):
            self._add(folder)

    def _walk(self, top: str, watch: bool = False) -> set[str]:
        """`top` and the folders below it that `keep` accepts (never through a symlink).
        With `watch`, each folder is watched before it is listed: a subfolder made while we
        walk is then either listed or announced by an event, never missed."""
        found: set[str] = set()
        if not os.path.isdir(top):
            return found
        stack = [top]
        while stack:
            folder = stack.pop()
            found.add(folder)
            if watch:
                self._add(folder)
            try:
                with os.scandir(folder) as it:
                    for entry in it:
                        try:
                            if not entry.is_dir(follow_symlinks=False):
                                continue
                        except OSError:
                            continue
                        if self._keep(entry.path):
                            stack.append(entry.path)
            except OSError:
                continue
        return found

    def _add_tree(self, top: str) -> None:
        self._walk(top, watch=True)

    def _add(self, folder: str) -> None:
        with self._lock:
            if folder in self._wds:
                return
        # a root given as a symlink (a workspace opened through one) is followed; below it,
        # folders are found without following symlinks, so none is watched through one
        top = folder in self._alone or folder in self._trees
        mask = MASK & ~IN_DONT_FOLLOW if top else MASK
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(folder), mask)
        if wd < 0:
            e = ctypes.get_errno()
            if e == errno.ENOSPC:
                log.warning("inotify watch limit reached at %s (fs.inotify.max_user_watches); "
                            "changes below it are not seen", folder)
            elif e not in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):
                log.warning("cannot watch %s: %s", folder, os.strerror(e))
            return
        with self._lock:
            old = self._paths.get(wd)
            if old is not None and old != folder:
                self._wds.pop(old, None)  # the same inode under a new name (a moved folder)
            self._paths[wd] = folder
            self._wds[folder] = wd

    def _remove(self, folder: str) -> None:
        with self._lock:
            wd = self._wds.pop(folder, None)
            if wd is not None:
                self._paths.pop(wd, None)
        if wd is not None:
            self._libc.inotify_rm_watch(self.fd, wd)

    def _forget_below(self, folder: str) -> None:
        """A folder moved away or deleted: drop its watches and those below it."""
        prefix = folder + os.sep
        with self._lock:
            gone = [f for f in self._wds if f == folder or f.startswith(prefix)]
        for f in gone:
            self._remove(f)

    def _forget_moved_top(self, top: str) -> None:
        """A root or a folder watched alone moved away (`mv ws ws.old && mv ws.new ws`, an
        atomic checkout): its watches follow the old folder to its new name, so what now has
        the name would never be seen. They are dropped, with those below it, and every root
        or folder watched alone below it (the repository's) is looked for like a deleted one."""
        self._forget_below(top)
        prefix = top + os.sep
        for other in (*self._alone, *self._trees):
            if other.startswith(prefix):
                self._gone.add(other)

    def _inside_tree(self, path: str) -> bool:
        return any(path == t or path.startswith(t + os.sep) for t in self._trees)

    # --- events -------------------------------------------------------------------------------

    def _unwatched_tops(self) -> list[str]:
        with self._lock:
            return [f for f in (*self._alone, *self._trees) if f not in self._wds]

    def _look_for_tops(self) -> None:
        """A root or a folder watched alone that is not there (deleted and made again: a
        workspace cloned anew, `~/.claude` made after the start) has no watch, so nothing
        would say it came back: looked for once a second, watched again when it is there,
        and announced. Only one seen gone: one that is there and cannot be watched (no
        access, the watch limit reached) is not walked again every second."""
        back: Items = []
        for top in self._unwatched_tops():
            if not os.path.isdir(top):
                self._gone.add(top)
                continue
            if top not in self._gone:
                continue
            self._gone.discard(top)
            if top in self._trees:
                self._add_tree(top)
            else:
                self._add(top)
            with self._lock:
                if top in self._wds:  # not when it cannot be watched (no access)
                    back.append((top, True))
        if back:
            self._on_items(back)

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        poller.register(self._stop_r, select.POLLIN)
        while True:
            try:
                ready = poller.poll(LOOK_AGAIN_MS if self._unwatched_tops() else None)
            except InterruptedError:
                continue
            if any(fd == self._stop_r for fd, _ in ready):
                return
            if not ready:
                try:
                    self._look_for_tops()
                except Exception:  # the reader must survive anything a callback raises
                    log.exception("watching a folder that came back failed")
                continue
            try:
                data = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                continue
            except OSError:
                log.exception("reading inotify events failed")
                return
            try:
                self._dispatch(data)
            except Exception:  # the reader must survive anything a callback raises
                log.exception("handling inotify events failed")

    def _dispatch(self, data: bytes) -> None:
        items: Items = []
        overflow = False
        offset, size = 0, len(data)
        while offset + _HEADER.size <= size:
            wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size
            name = data[offset:offset + length].rstrip(b"\0")
            offset += length
            if mask & IN_Q_OVERFLOW:
                overflow = True
                continue
            with self._lock:
                folder = self._paths.get(wd)
            if folder is None:
                continue
            if mask & IN_IGNORED:
                with self._lock:
                    if self._paths.get(wd) == folder:
                        del self._paths[wd]
                        self._wds.pop(folder, None)
                continue
            if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                if folder in self._alone or folder in self._trees:
                    items.append((folder, True))
                    self._gone.add(folder)  # made again at once, it is still looked for
                    if mask & IN_MOVE_SELF:
                        self._forget_moved_top(folder)
                continue
            path = os.path.join(folder, os.fsdecode(name)) if name else folder
            is_dir = bool(mask & IN_ISDIR)
            if mask & IN_CLOSE_WRITE:
                items.append((path, False))
                continue
            items.append((path, True))
            if not is_dir or not self._inside_tree(path):
                continue
            if mask & (IN_CREATE | IN_MOVED_TO):
                if self._keep(path):
                    # watch it now; anything created inside before the watch existed is seen
                    # by the refresh this event causes, which rereads the folder
                    self._add_tree(path)
            elif mask & (IN_MOVED_FROM | IN_DELETE):
                self._forget_below(path)
        if items:
            self._on_items(items)
        if overflow:
            log.warning("inotify queue overflowed; rescanning")
            self._on_overflow()

    # --- lifecycle ----------------------------------------------------------------------------

    def stop(self) -> None:
        if self._stop_w >= 0:
            try:
                os.write(self._stop_w, b"x")
            except OSError:
                pass
        thread = getattr(self, "_thread", None)
        if thread is not None and threading.current_thread() is not thread:
            thread.join(timeout=10)
        self._close()

    def _close(self) -> None:
        for attr in ("fd", "_stop_r", "_stop_w"):
            fd = getattr(self, attr, -1)
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, attr, -1)
