"""A database closed cleanly, and untouched since, is not checked again when it is next opened.

`PRAGMA quick_check` reads the whole file: 57-84 ms for a 253 MB database in the page cache,
2.8 s from the disk (the first start after a reboot), and the first request that needs the
sessions waits for it. So a clean close notes the file as it left it (inode, size, time of its
last change) in a note beside it. The next open takes the note away before anything else (a
crash after that leaves none, and the open after the crash checks) and skips the check only when
the file is still as noted and no write-ahead log with content lies beside it (another process
still had the database open, or died with it open).

Owns: the note (`sessions.sqlite3.closed`, private like the database).
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


class _Note(msgspec.Struct, frozen=True):
    inode: int
    size: int
    mtime_ns: int


def _note_of(path: Path) -> Path:
    return path.with_name(path.name + NOTE_SUFFIX)


def _log_has_content(path: Path) -> bool:
    wal = path.with_name(path.name + "-wal")
    try:
        return wal.stat().st_size > 0
    except FileNotFoundError:
        return False


def note_clean_close(path: Path) -> None:
    """Note ``path`` as it is now, its connection just closed; no note while a write-ahead
    log with content is beside it (another connection still has the database open)."""
    try:
        if _log_has_content(path):
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
    if _log_has_content(path):
        return False
    return (noted.inode, noted.size, noted.mtime_ns) == (info.st_ino, info.st_size,
                                                           info.st_mtime_ns)
