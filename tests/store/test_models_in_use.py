"""The models a state folder's sessions use, read at a start before the store opens: which
encoding a restarted gateway builds first."""

from __future__ import annotations

import os

from ctxlayer.store import DB_NAME, SessionStore, models_in_use


def test_the_most_recently_updated_sessions_models_come_first(tmp_path):
    store = SessionStore(tmp_path)
    for k, (model, now) in enumerate([("gpt-4o", "2026-01-01T00:00:01"),
                                      ("claude-sonnet-4-5", "2026-01-01T00:00:03"),
                                      ("gpt-4o-mini", "2026-01-01T00:00:02"),
                                      ("claude-sonnet-4-5", "2026-01-01T00:00:00")]):
        store.create_or_get("/ws", f"s{k}", model=model, mode="deep", budget=None, now=now)
    store.close()
    assert models_in_use(tmp_path) == ["claude-sonnet-4-5", "gpt-4o-mini", "gpt-4o"]


def test_it_only_reads(tmp_path):
    """No database: nothing, and none is made. A database: read as it is, not written (a
    reader of a WAL database may leave SQLite's empty -wal and -shm beside it, private as the
    database is)."""
    assert models_in_use(tmp_path) == []
    assert not (tmp_path / DB_NAME).exists()
    store = SessionStore(tmp_path)
    store.create_or_get("/ws", "s1", model="gpt-4o", mode="deep", budget=None, now="t")
    store.close()
    db = tmp_path / DB_NAME
    before = (db.stat().st_mtime_ns, db.read_bytes())
    assert models_in_use(tmp_path) == ["gpt-4o"]
    assert (db.stat().st_mtime_ns, db.read_bytes()) == before
    for extra in tmp_path.iterdir():
        assert extra.stat().st_mode & 0o077 == 0, extra
        if extra.name.endswith("-wal"):
            assert extra.stat().st_size == 0


def test_a_database_it_cannot_read_gives_no_models(tmp_path):
    (tmp_path / DB_NAME).write_bytes(b"not a database at all" * 100)
    assert models_in_use(tmp_path) == []
    unreadable = tmp_path / "other"
    unreadable.mkdir()
    (unreadable / DB_NAME).mkdir()  # a folder where the file would be
    assert models_in_use(unreadable) == []
    assert os.listdir(unreadable) == [DB_NAME]
