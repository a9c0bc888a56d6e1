"""A database closed cleanly, and untouched since, is not checked again when it is next opened.

`PRAGMA quick_check` reads the whole file: 57-84 ms for a 253 MB database in the page cache,
2.8 s from the disk (the first start after a reboot), and the first request that needs the
sessions waits for it. So a clean close notes the file as it left it (inode, size, time of its
last change) in a note beside it. The next open takes the note away before anything else (a
crash after that leaves none, and the open after the crash checks) and skips the check only when
the file is still as noted and no write-ahead log with content lies beside it (another process
still had the database open, or died with it open).

A process that met the file damaged while it ran (SQLite said "malformed" to a query) leaves a
second note, `sessions.sqlite3.damaged`: while it is there no clean close is noted (by that
process or another daemon on the folder, which may not have read the damaged pages) and the
next open checks the whole file, which moves it aside. Before, the clean close noted the damaged
file as it was, the next open left the check out, and every start failed the same way.

Owns: the notes (`sessions.sqlite3.closed`, `.damaged`, private like the database).
Must not: open the database.
"""

from __future__ import annotations

import logging
from pathlib import Path

import msgspec

from ctxlayer.statefiles import write_private

log = logging.getLogger("ctxlayer.store")

#: the note's name: the database's, with this added
NOTE_SUFFIX = ".closed"
#: the name of the note that the file was met damaged: the database's, with this added
DAMAGED_SUFFIX = ".damaged"


class _Note(msgspec.Struct, frozen=True):
    inode: int
    size: int
    mtime_ns: int


def _note_of(path: Path) -> Path:
    return path.with_name(path.name + NOTE_SUFFIX)


def _damaged_note_of(path: Path) -> Path:
    return path.with_name(path.name + DAMAGED_SUFFIX)


def note_damaged(path: Path, why: str) -> None:
    """Note that ``path`` was met damaged: the next open checks it whole (see the docstring)."""
    try:
        write_private(_damaged_note_of(path), why + "\n")
    except OSError as err:  # the clean close is left out all the same (the store knows)
        log.debug("no damaged note for %s: %s", path, err)


def met_damaged(path: Path) -> bool:
    """Whether a process noted ``path`` damaged since it was last checked whole."""
    return _damaged_note_of(path).exists()


def checked_whole(path: Path) -> None:
    """``path`` passed the check at its open (or is a fresh file): the damaged note goes."""
    try:
        _damaged_note_of(path).unlink()
    except FileNotFoundError:
        pass
    except OSError as err:
        log.debug("the damaged note of %s stays: %s", path, err)


def _log_has_content(path: Path) -> bool:
    wal = path.with_name(path.name + "-wal")
    try:
        return wal.stat().st_size > 0
    except FileNotFoundError:
        return False


def note_clean_close(path: Path) -> None:
    """Note ``path`` as it is now, its connection just closed; no note while a write-ahead
    log with content is beside it (another connection still has the database open), nor while
    the file is noted damaged."""
    try:
        if _log_has_content(path) or met_damaged(path):
            return
        info = path.stat()
        write_private(_note_of(path), msgspec.json.encode(
            _Note(inode=info.st_ino, size=info.st_size, mtime_ns=info.st_mtime_ns)).decode())
    except OSError as err:  # no note: the next open checks, as after a crash
        log.debug("no clean-close note for %s: %s", path, err)


def closed_cleanly(path: Path) -> bool:
    """Take the note of ``path`` away; whether the file is as the last clean close left it."""
    note = _note_of(path)
    try:
        data = note.read_bytes()
        note.unlink()
    except OSError:  # none, or one that cannot be taken away (it could outlive a crash)
        return False
    try:
        noted = msgspec.json.decode(data, type=_Note)
        info = path.stat()
    except (msgspec.DecodeError, OSError):
        return False
    if _log_has_content(path) or met_damaged(path):
        return False
    return (noted.inode, noted.size, noted.mtime_ns) == (info.st_ino, info.st_size,
                                                           info.st_mtime_ns)
