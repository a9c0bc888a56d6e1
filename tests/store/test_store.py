"""The session database: durability under kill -9, corruption, migrations, isolation."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading

import pytest

from ctxlayer.core.zones import Rule, new_item
from ctxlayer.protocol import AuditEntry, Message
from ctxlayer.store import DB_NAME, SessionStore, StoreError, schema, state_dir
from ctxlayer.store.errors import describe_store_error

NOW = "2026-01-01T00:00:00.000+00:00"

WRITER = textwrap.dedent("""
    import sys
    from ctxlayer.protocol import Message
    from ctxlayer.store import SessionStore
    store = SessionStore(sys.argv[1], durability=sys.argv[2])
    row, _ = store.create_or_get("/ws", "s1", model="gpt-4o", mode="deep", budget=None,
                                 now="t")
    seq = 0
    while True:
        msg = Message(role="user", content=f"message number {seq} " + "x" * 2000, id=f"m{seq}")
        store.append(row.sid, [(seq, msg, 500)], "t")
        print(seq, flush=True)   # acknowledged: the commit returned
        seq += 1
""")


@pytest.mark.parametrize("durability", ["normal", "full"])
def test_every_acknowledged_append_survives_kill_9(tmp_path, durability):
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), durability],
                            stdout=subprocess.PIPE, text=True)
    acknowledged = []
    try:
        for line in proc.stdout:
            acknowledged.append(int(line))
            if len(acknowledged) >= 300:
                break
        os.kill(proc.pid, signal.SIGKILL)  # mid-stream: the writer is appending right now
    finally:
        proc.wait(timeout=30)
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    store = SessionStore(tmp_path)
    assert store.recovered_from is None
    assert store.checked_at_open, "killed: no clean close, so the whole file is checked"
    row = store.get("/ws", "s1")
    stored = store.messages(row.sid)
    seqs = {seq for seq, _, _ in stored}
    assert set(acknowledged) <= seqs
    assert stored[acknowledged[-1]][1].content.startswith(f"message number {acknowledged[-1]} ")
    assert [s for s, _, _ in stored] == sorted(seqs) == list(range(len(stored)))


def test_a_corrupt_database_is_moved_aside_and_a_fresh_one_started(tmp_path, caplog):
    (tmp_path / "keep.txt").write_text("unrelated")
    (tmp_path / DB_NAME).write_bytes(b"this is not an sqlite database" * 200)
    with caplog.at_level(logging.WARNING, logger="ctxlayer.store"):
        store = SessionStore(tmp_path)
    assert store.recovered_from == tmp_path / f"{DB_NAME}.corrupt-1"
    assert store.recovered_from.read_bytes().startswith(b"this is not an sqlite database")
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert str(tmp_path / DB_NAME) in warnings[0].getMessage()
    assert str(store.recovered_from) in warnings[0].getMessage()
    assert (tmp_path / "keep.txt").read_text() == "unrelated"
    row, created = store.create_or_get("/ws", "s", model="m", mode="deep", budget=None, now=NOW)
    assert created and store.schema_version == schema.VERSION


def test_a_damaged_page_is_detected(tmp_path):
    store = SessionStore(tmp_path)
    row, _ = store.create_or_get("/ws", "s", model="m", mode="deep", budget=None, now=NOW)
    store.append(row.sid, [(k, Message(role="user", content="y" * 3000), 1) for k in range(50)],
                 NOW)
    store.close()
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray((tmp_path / DB_NAME).read_bytes())
    for page in range(2, len(data) // 4096):  # scribble over every page but the header
        data[page * 4096 + 10: page * 4096 + 400] = b"\xff" * 390
    (tmp_path / DB_NAME).write_bytes(bytes(data))
    again = SessionStore(tmp_path)
    assert again.checked_at_open, "closed cleanly, then written to: checked again"
    assert again.recovered_from is not None
    assert again.list("/ws") == []


def test_schema_is_versioned_and_migrations_run_in_order(tmp_path):
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.executescript(schema.MIGRATIONS[0] + "; PRAGMA user_version=1;")
    conn.execute("INSERT INTO sessions (workspace, session_id, model, mode, created_at, "
                 "updated_at) VALUES ('/ws', 'old', 'm', 'deep', 't', 't')")
    conn.commit()
    conn.close()
    store = SessionStore(tmp_path)
    assert store.schema_version == schema.VERSION == 13
    old = store.get("/ws", "old")
    assert old is not None and old.revision == 0  # data kept across the migration
    assert old.system_spec is None
    indexes = {r[0] for r in store._conn.execute("SELECT name FROM sqlite_master "
                                                  "WHERE type='index'")}
    assert {"sessions_by_workspace", "audit_by_time", "conversations_by_time",
            "answers_by_time"} <= indexes


def test_rows_written_before_raw_messages_existed_still_load(tmp_path):
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.executescript(schema.MIGRATIONS[0] + ";" + schema.MIGRATIONS[1] +
                       "; PRAGMA user_version=2;")
    conn.execute("INSERT INTO sessions (workspace, session_id, model, mode, created_at, "
                 "updated_at, next_seq) VALUES ('/ws', 'old', 'm', 'deep', 't', 't', 1)")
    conn.execute("INSERT INTO messages (sid, seq, body, tokens) VALUES (1, 0, ?, 3)",
                 (b'{"role":"user","content":"written by version 2","id":"m0"}',))
    conn.commit()
    conn.close()
    store = SessionStore(tmp_path)
    assert store.schema_version == schema.VERSION
    row = store.get("/ws", "old")
    assert [(s, m.content) for s, m, _ in store.messages(row.sid)] == [
        (0, "written by version 2")]
    assert store.raws(row.sid) == {}  # an old row has no provider message: sent as text
    native = b'{"format":"openai","message":{"role":"user","content":[]}}'
    store.append(row.sid, [(1, Message(role="user", content="", id="m1"), 4)], NOW,
                 raws={1: native})
    again = SessionStore(tmp_path)
    assert again.raws(row.sid) == {1: native}
    assert len(again.messages(row.sid)) == 2


def test_a_newer_schema_is_refused_not_destroyed(tmp_path):
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute("PRAGMA user_version=99")
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        SessionStore(tmp_path)
    assert (tmp_path / DB_NAME).exists()


def test_state_dir_order(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("CTXLAYER_STATE_DIR", raising=False)
    if sys.platform.startswith("linux"):
        assert state_dir() == tmp_path / "xdg" / "ctxlayer"
    monkeypatch.setenv("CTXLAYER_STATE_DIR", str(tmp_path / "env"))
    assert state_dir() == tmp_path / "env"
    assert state_dir(tmp_path / "arg") == tmp_path / "arg"


def test_sessions_are_keyed_by_workspace(tmp_path):
    store = SessionStore(tmp_path)
    a, _ = store.create_or_get("/ws/a", "same", model="m", mode="deep", budget=None, now=NOW)
    b, _ = store.create_or_get("/ws/b", "same", model="m", mode="short", budget=None, now=NOW)
    assert a.sid != b.sid
    store.append(a.sid, [(0, Message(role="user", content="only in a"), 3)], NOW)
    assert [r.session_id for r in store.list("/ws/a")] == ["same"]
    assert store.list("/ws/a")[0].messages == 1 and store.list("/ws/b")[0].messages == 0
    again, created = store.create_or_get("/ws/a", "same", model="x", mode="debug", budget=5,
                                         now=NOW)
    assert not created and again.mode == "deep" and again.model == "m"


def test_rules_items_and_audit_round_trip(tmp_path):
    store = SessionStore(tmp_path)
    row, _ = store.create_or_get("/ws", "s", model="m", mode="deep", budget=None, now=NOW)
    store.put_rule(row.sid, Rule(id="r1", text="Never use any", weight=3, seq=0), NOW)
    item = new_item("i1", "log", "KeyError at app.py:42", optional=False, seq=0)
    item.heat = 0.49
    store.put_items(row.sid, [item])
    entries = [AuditEntry(action="dropped", reason=f"r{k}", summary="s", tokens_before=1,
                          tokens_after=0) for k in range(3)]
    store.add_audit(row.sid, entries, NOW)
    reopened = SessionStore(tmp_path)
    assert reopened.rules(row.sid)[0].text == "Never use any"
    (back,) = reopened.items(row.sid)
    assert back.heat == 0.49 and back.optional is False and back.keys == item.keys
    assert [e.reason for e in reopened.audit(row.sid)] == ["r2", "r1", "r0"]  # newest first
    assert [e.reason for e in reopened.audit(row.sid, limit=1)] == ["r2"]
    assert reopened.delete_rule(row.sid, "r1") and reopened.rules(row.sid) == []


@pytest.mark.parametrize("json_each", [True, False])
def test_an_audit_batch_comes_back_whole_and_in_order(tmp_path, json_each):
    """A turn's audit goes in as JSON arrays (a statement each), or row by row where SQLite
    has no JSON functions: every entry comes back equal, whatever its text holds, in the order
    it was written."""
    store = SessionStore(tmp_path)
    assert store._json_each, "this SQLite has its JSON functions"
    store._json_each = json_each  # an older SQLite without them: one row at a time
    row, _ = store.create_or_get("/ws", "s", model="m", mode="deep", budget=None, now=NOW)
    odd = ['quote " backslash \\ tab \t', "line\nbreak", "é中文🙂", "\u0000 nul", "[1, {}]", ""]
    entries = [AuditEntry(action="truncated" if k % 2 else "dropped", reason=odd[k % len(odd)],
                          summary=f"user: {odd[(k + 1) % len(odd)]}", tokens_before=k,
                          tokens_after=k // 2, message_id=None if k % 3 else f"m{k}",
                          index=k if k % 5 else None) for k in range(1000)]
    store.add_audit(row.sid, entries[:400], NOW)
    store.add_audit(row.sid, [], NOW)
    store.add_audit(row.sid, entries[400:], NOW)
    assert SessionStore(tmp_path).audit(row.sid) == entries[::-1]


def test_concurrent_appends_to_50_sessions_do_not_cross(tmp_path):
    store = SessionStore(tmp_path)
    rows = [store.create_or_get("/ws", f"s{k}", model="m", mode="deep", budget=None,
                                now=NOW)[0] for k in range(50)]
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for n in range(20):
                msg = Message(role="user", content=f"session {k} message {n}")
                store.append(rows[k].sid, [(n, msg, 4)], NOW)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for k, row in enumerate(rows):
        contents = [m.content for _, m, _ in store.messages(row.sid)]
        assert contents == [f"session {k} message {n}" for n in range(20)]


def test_a_conversation_window_is_kept_and_an_older_write_never_wins(tmp_path):
    store = SessionStore(tmp_path)
    assert store.conversation("/ws", "c1") is None
    store.put_conversation("/ws", "c1", "gpt-4o", 3, b"turn three", NOW)
    store.put_conversation("/ws", "c1", "gpt-4o", 2, b"turn two, finished late", NOW)
    assert store.conversation("/ws", "c1") == ("gpt-4o", 3, b"turn three")
    store.put_conversation("/ws", "c1", "gpt-4o", 4, b"turn four", NOW)
    store.close()
    again = SessionStore(tmp_path)
    assert again.conversation("/ws", "c1") == ("gpt-4o", 4, b"turn four")
    assert again.conversation("/other", "c1") is None


def test_what_a_turn_sent_is_kept_beside_its_window_and_an_older_write_never_wins(tmp_path):
    store = SessionStore(tmp_path)
    assert store.sent_of("/ws", ["c1"]) == {}
    store.put_sent("/ws", "c1", 3, b"after window three", NOW)
    store.put_sent("/ws", "c1", 2, b"after window two, finished late", NOW)
    store.put_sent("/ws", "c1", 3, b"a later turn, window three", NOW)
    store.put_sent("/ws", "c2", 1, b"another chat", NOW)
    assert store.sent_of("/ws", ["c1", "c3"]) == {"c1": (3, b"a later turn, window three")}
    assert store.sent_of("/ws", []) == {}
    store.close()
    assert SessionStore(tmp_path).sent_of("/ws", ["c2"]) == {"c2": (1, b"another chat")}


def test_a_folder_of_schema_11_opens_with_its_windows(tmp_path):
    """A state folder written before what a turn sent was kept (schema 11) opens: its
    windows read as they were, and what the next turn sends is kept beside them."""
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.executescript(";".join(schema.MIGRATIONS[:11]) + "; PRAGMA user_version=11;")
    conn.execute("INSERT INTO conversations (workspace, conversation_id, model, turn, body, "
                 "updated_at) VALUES ('/ws', 'c1', 'gpt-4o', 2, x'7b7d', ?)", (NOW,))
    conn.commit()
    conn.close()
    store = SessionStore(tmp_path)
    assert store.schema_version == schema.VERSION == 13
    assert store.conversation("/ws", "c1") == ("gpt-4o", 2, b"{}")
    assert store.sent_of("/ws", ["c1"]) == {}
    store.put_sent("/ws", "c1", 2, b"sent", NOW)
    assert store.sent_of("/ws", ["c1"]) == {"c1": (2, b"sent")}


def test_a_folder_of_schema_12_lists_its_windows_and_one_set_aside_is_not(tmp_path):
    """A state folder written before whether a window is listed was kept (schema 12) lists
    its windows as before; one set aside since (a title asked beside a chat) is neither
    listed nor counted, until it is listed again or its next window is written."""
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.executescript(";".join(schema.MIGRATIONS[:12]) + "; PRAGMA user_version=12;")
    for cid, at in [("chat", "2026-01-01T00:00:01"), ("title", "2026-01-01T00:00:02")]:
        conn.execute("INSERT INTO conversations (workspace, conversation_id, model, turn, "
                     "body, updated_at) VALUES ('/ws', ?, 'gpt-4o', 1, x'7b7d', ?)", (cid, at))
    conn.commit()
    conn.close()
    store = SessionStore(tmp_path)
    assert store.schema_version == schema.VERSION == 13
    assert [r[0] for r in store.recent_conversations("/ws", 10)] == ["title", "chat"]
    store.set_listed("/ws", "title", False)
    store.set_listed("/ws", "none kept", False)  # nothing to do
    assert [r[0] for r in store.recent_conversations("/ws", 10)] == ["chat"]
    assert store.count_conversations("/ws", []) == 1
    assert store.conversation("/ws", "title") == ("gpt-4o", 1, b"{}")  # still taken up
    store.put_conversation("/ws", "title", "gpt-4o", 2, b"{}", "2026-01-01T00:00:03")
    assert [r[0] for r in store.recent_conversations("/ws", 10)] == ["title", "chat"]
    store.put_conversation("/ws", "chat", "gpt-4o", 2, b"{}", NOW, listed=False)
    assert [r[0] for r in store.recent_conversations("/ws", 10)] == ["title"]
    store.set_listed("/ws", "chat", True)
    assert store.count_conversations("/ws", []) == 2
    store.close()


def test_a_familys_kept_windows_are_its_own_and_its_forks_most_recent_first(tmp_path):
    store = SessionStore(tmp_path)
    for cid, model, at in [("cab", "gpt-4o", "2026-01-01T00:00:01"),
                           ("cab-1", "gpt-4o", "2026-01-01T00:00:03"),
                           ("cab-12", "gpt-4o", "2026-01-01T00:00:02"),
                           ("cab-2", "claude-sonnet-4-5", "2026-01-01T00:00:04"),
                           ("cabc", "gpt-4o", "2026-01-01T00:00:05"),  # another family
                           ("ca", "gpt-4o", "2026-01-01T00:00:06")]:
        store.put_conversation("/ws", cid, model, 1, cid.encode(), at)
    store.put_conversation("/other", "cab-3", "gpt-4o", 1, b"elsewhere", NOW)
    on_gpt4o = "gpt-4o".__eq__  # the models the chat is counted alike on
    got = store.family_conversations("/ws", "cab", on_gpt4o)
    assert [r[0] for r in got] == ["cab-1", "cab-12", "cab"]
    assert got[0] == ("cab-1", 1, b"cab-1")
    assert [r[0] for r in store.family_conversations("/ws", "cab", on_gpt4o, most=2)] == \
        ["cab-1", "cab-12"]
    assert [r[0] for r in store.family_conversations("/ws", "cab", on_gpt4o, but=["cab-12"])] \
        == ["cab-1", "cab"]
    assert store.family_conversations("/ws", "cx", on_gpt4o) == []
    store.close()


def test_a_store_error_is_described_once(tmp_path, monkeypatch):
    """A database that cannot be written said its advice twice, one inside the other: the
    open's own StoreError, described again where it was answered."""
    def readonly(*_args, **_kwargs):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(SessionStore, "_connect", readonly)
    with pytest.raises(StoreError) as err:
        SessionStore(tmp_path / DB_NAME)
    said = describe_store_error(err.value)
    assert said.count("check the state folder's permissions") == 1, said
    assert "attempt to write a readonly database" in said
