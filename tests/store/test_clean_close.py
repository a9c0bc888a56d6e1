"""A database closed cleanly and untouched since is opened without reading all of it again
(`PRAGMA quick_check`: 2.8 s for a 253 MB file read from the disk); anything else is checked:
a crash, a file changed after the close, a write-ahead log with content beside it, a note that
cannot be read. The note is taken away at every open, so a crash after it leaves none."""

from __future__ import annotations

import os
import sqlite3
import stat

import pytest

from ctxlayer.protocol import Message
from ctxlayer.store import DB_NAME, SessionStore
from ctxlayer.store.closed import DAMAGED_SUFFIX, NOTE_SUFFIX

NOW = "2026-01-01T00:00:00.000+00:00"


def _filled(tmp_path) -> SessionStore:
    store = SessionStore(tmp_path)
    row, _ = store.create_or_get("/ws", "s", model="m", mode="deep", budget=None, now=NOW)
    store.append(row.sid, [(k, Message(role="user", content=f"m{k} " + "y" * 3000), 1)
                           for k in range(20)], NOW)
    return store


def test_a_clean_close_lets_the_next_open_leave_out_the_check_once(tmp_path):
    note = tmp_path / (DB_NAME + NOTE_SUFFIX)
    first = _filled(tmp_path)
    assert first.checked_at_open and not note.exists()
    first.close()
    assert note.exists()
    if os.name == "posix":
        assert stat.S_IMODE(note.stat().st_mode) == 0o600
    again = SessionStore(tmp_path)
    assert not again.checked_at_open
    assert not note.exists(), "taken away at the open: a crash from here on is checked"
    assert len(again.messages(again.get("/ws", "s").sid)) == 20
    third = SessionStore(tmp_path)  # `again` still open, never closed: as after a crash
    assert third.checked_at_open


def test_a_file_changed_after_the_clean_close_is_checked(tmp_path):
    _filled(tmp_path).close()
    conn = sqlite3.connect(tmp_path / DB_NAME)  # another program writes to it
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()
    assert SessionStore(tmp_path).checked_at_open


def test_a_log_with_content_beside_the_file_is_checked(tmp_path):
    _filled(tmp_path).close()
    other = sqlite3.connect(tmp_path / DB_NAME)  # another process, still open, writes
    other.execute("PRAGMA wal_autocheckpoint=0")
    other.execute("INSERT INTO sessions (workspace, session_id, model, mode, created_at, "
                  "updated_at, next_seq) VALUES ('/ws', 't', 'm', 'deep', 'x', 'x', 0)")
    other.commit()
    assert (tmp_path / (DB_NAME + "-wal")).stat().st_size > 0
    store = SessionStore(tmp_path)
    assert store.checked_at_open
    assert store.get("/ws", "t") is not None
    other.close()


def test_no_note_while_another_connection_keeps_a_log_with_content(tmp_path):
    store = _filled(tmp_path)
    other = sqlite3.connect(tmp_path / DB_NAME)
    other.execute("PRAGMA wal_autocheckpoint=0")
    other.execute("UPDATE sessions SET mode='fast'")
    other.commit()
    store.close()  # not the last connection: the log keeps what the other wrote
    assert not (tmp_path / (DB_NAME + NOTE_SUFFIX)).exists()
    other.close()


def test_an_unreadable_note_is_taken_away_and_the_file_checked(tmp_path):
    _filled(tmp_path).close()
    note = tmp_path / (DB_NAME + NOTE_SUFFIX)
    note.write_text("{not json")
    assert SessionStore(tmp_path).checked_at_open
    assert not note.exists()


def test_a_file_met_damaged_is_never_noted_closed_cleanly_and_is_moved_aside(tmp_path):
    """SQLite said "malformed" to a query while two daemons had the file open: neither close
    notes it clean (the other never read the damaged pages), so the next open checks it and
    moves it aside. The clean close noted the damaged file, and every start failed again."""
    first = _filled(tmp_path)
    sid = first.get("/ws", "s").sid
    first.close()
    met, other = SessionStore(tmp_path), SessionStore(tmp_path)  # nothing read yet
    data = bytearray((tmp_path / DB_NAME).read_bytes())
    for page in range(3, len(data) // 4096):  # the schema's pages kept
        data[page * 4096: page * 4096 + 4096] = os.urandom(4096)
    with open(tmp_path / DB_NAME, "r+b") as f:  # in place: the same file, as a disk error
        f.write(bytes(data))
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):
        met.messages(sid)
    met.close()
    other.close()
    assert not (tmp_path / (DB_NAME + NOTE_SUFFIX)).exists()
    assert met.damaged is not None and other.damaged is None
    again = SessionStore(tmp_path)
    assert again.checked_at_open
    assert again.recovered_from == tmp_path / f"{DB_NAME}.corrupt-1"
    assert again.list("/ws") == []
    again.close()
    assert (tmp_path / (DB_NAME + NOTE_SUFFIX)).exists(), "the fresh file closes cleanly"
    assert not (tmp_path / (DB_NAME + DAMAGED_SUFFIX)).exists()
