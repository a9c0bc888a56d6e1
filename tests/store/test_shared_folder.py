"""Several daemons share one state folder (an editor window each, all started at once when the
editor restores its windows). Opening the database while another process opens or writes it
waits for it; only a damaged file is moved aside. Before, any error at the open moved the file
aside: two processes opening a new folder together did so in 24 of 30 tries ("database is
locked" while turning it to WAL, "table sessions already exists" when both created the tables),
and the daemon that had it open went on writing its sessions into the file moved aside."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from ctxlayer.protocol import Message
from ctxlayer.store import DB_NAME, SessionStore, StoreError, db

NOW = "2026-01-01T00:00:00.000+00:00"

#: a process that opens the store at an agreed moment, writes a session and says how it went
OPEN_AT = """
import sys, time
from ctxlayer.protocol import Message
from ctxlayer.store import SessionStore
folder, at, name = sys.argv[1], float(sys.argv[2]), sys.argv[3]
while time.time() < at:
    pass
store = SessionStore(folder)
row, _ = store.create_or_get("/ws", name, model="m", mode="deep", budget=None, now="t")
store.append(row.sid, [(0, Message(role="user", content=name), 1)], "t")
print(store.recovered_from)
store.close()
"""


def test_processes_opening_a_new_folder_together_keep_one_database(tmp_path):
    for attempt in range(5):
        folder = tmp_path / f"state{attempt}"
        at = time.time() + 1.0  # both past their imports, then both at once
        procs = [subprocess.Popen([sys.executable, "-c", OPEN_AT, str(folder), str(at), name],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for name in ("a", "b")]
        outs = [p.communicate(timeout=60) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], [err[-800:] for _, err in outs]
        assert [out.strip() for out, _ in outs] == ["None", "None"]  # nothing moved aside
        assert sorted(f.name for f in folder.iterdir() if ".corrupt" in f.name) == []
        store = SessionStore(folder)
        assert {store.get("/ws", n) is not None for n in ("a", "b")} == {True}
        store.close()


def test_a_database_busy_past_the_wait_is_an_error_and_stays_where_it_is(tmp_path, monkeypatch):
    """A new file another process holds (it is writing it, not yet in WAL mode): the open
    waits, then says so; the file is left where it is, and the next open uses it."""
    holder = sqlite3.connect(tmp_path / DB_NAME, isolation_level=None)
    holder.execute("CREATE TABLE theirs (x)")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("INSERT INTO theirs VALUES (1)")
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 200)
    with pytest.raises(StoreError, match="locked by another process"):
        SessionStore(tmp_path)
    holder.execute("COMMIT")
    holder.close()
    assert sorted(p.name for p in tmp_path.iterdir() if ".corrupt" in p.name) == []
    again = SessionStore(tmp_path)  # once it is free, the same file, with what it holds
    assert again.recovered_from is None
    row, _ = again.create_or_get("/ws", "s", model="m", mode="deep", budget=None, now=NOW)
    again.append(row.sid, [(0, Message(role="user", content="kept"), 1)], NOW)
    again.close()
    check = sqlite3.connect(tmp_path / DB_NAME)
    assert check.execute("SELECT x FROM theirs").fetchall() == [(1,)]
    check.close()


def test_a_damaged_file_is_still_moved_aside(tmp_path):
    (tmp_path / DB_NAME).write_bytes(b"this is no database " * 512)
    store = SessionStore(tmp_path)
    assert store.recovered_from == tmp_path / f"{DB_NAME}.corrupt-1"
    assert store.recovered_from.read_bytes().startswith(b"this is no database")


def test_a_state_folder_that_cannot_be_made_is_a_store_error_naming_it(tmp_path):
    """A file where the folder should be (or no permission): a StoreError saying which folder
    and what to do, which the daemon answers as -32005; it was an internal error with a
    FileExistsError traceback on every session request."""
    (tmp_path / "state").write_text("not a folder")
    with pytest.raises(StoreError) as err:
        SessionStore(tmp_path / "state")
    said = str(err.value)
    assert f"the state folder {tmp_path / 'state'} cannot be used (a file is there)" in said
    assert "CTXLAYER_STATE_DIR" in said


def test_two_opening_a_damaged_file_together_move_it_aside_once(tmp_path, monkeypatch):
    """Both find the file damaged, and both would move it aside at once (held at a barrier
    here, which two editor windows restored together met in 4 of 40 tries): one's rename
    found the file gone, a raw FileNotFoundError out of SessionStore(), or one moved aside
    the fresh file the other had just made. Now the move is one process's alone, and the
    other opens the fresh file: one copy moved aside, both stores on one database."""
    (tmp_path / DB_NAME).write_bytes(b"SQLite format 3\x00" + b"\xee" * (1 << 20))
    both = threading.Barrier(2, timeout=3)
    moving = db.SessionStore._move_aside

    def held(store, err):
        try:
            both.wait()
        except threading.BrokenBarrierError:  # the other never came to move it: fine
            pass
        return moving(store, err)

    monkeypatch.setattr(db.SessionStore, "_move_aside", held)
    opened: dict[str, SessionStore | BaseException] = {}

    def open_one(name: str) -> None:
        try:
            opened[name] = SessionStore(tmp_path)
        except BaseException as exc:  # said below, with what the other did
            opened[name] = exc

    threads = [threading.Thread(target=open_one, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(isinstance(s, SessionStore) for s in opened.values()), opened
    stores = [opened["a"], opened["b"]]
    assert sorted(p.name for p in tmp_path.iterdir() if ".corrupt" in p.name) == [
        f"{DB_NAME}.corrupt-1"]
    assert [s.recovered_from is not None for s in stores].count(True) == 1
    for name, store in zip("ab", stores, strict=True):
        row, _ = store.create_or_get("/ws", name, model="m", mode="deep", budget=None, now=NOW)
        store.append(row.sid, [(0, Message(role="user", content=name), 1)], NOW)
    assert [s.gone_now() for s in stores] == [None, None]
    assert {len(s.list("/ws")) for s in stores} == {2}, "one database, both sessions in it"
    for store in stores:
        store.close()
