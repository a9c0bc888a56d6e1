"""The state folder forgets (state/expiry.py): a workspace's audit entries, conversation
windows, moved families and answer ids older than a time go; its sessions, messages and rules, and other
workspaces, stay."""

from __future__ import annotations

from ctxlayer.core.zones import Rule
from ctxlayer.protocol import AuditEntry, Message
from ctxlayer.store import SessionStore, db

OLD, CUT, NEW = "2026-01-01T00:00:00.000+00:00", "2026-02-01T00:00:00.000+00:00", \
    "2026-03-01T00:00:00.000+00:00"


def _entry(k: int) -> AuditEntry:
    return AuditEntry(action="dropped", reason="older history", summary=f"message {k}",
                      tokens_before=10, tokens_after=0, message_id=f"m{k}", index=k)


def _count(store: SessionStore, sql: str, *args) -> int:
    with store._tx() as c:
        return c.execute(sql, args).fetchone()[0]


def test_old_audit_entries_and_windows_go_sessions_and_other_workspaces_stay(
        tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(db, "FORGET_CHUNK", 2)  # three entries to go: two transactions
    store = SessionStore(tmp_path)
    rows = {}
    for ws in ("/ws/a", "/ws/b"):
        row, _ = store.create_or_get(ws, "chat", model="gpt-4o", mode="deep", budget=None,
                                     now=OLD)
        rows[ws] = row
        store.append(row.sid, [(0, Message(role="user", content="keep me"), 3)], OLD)
        store.put_rule(row.sid, Rule(id="r1", text="always run the tests", weight=1.0), OLD)
        store.add_audit(row.sid, [_entry(k) for k in range(3)], OLD)
        store.add_audit(row.sid, [_entry(k) for k in range(3, 5)], NEW)
        store.put_conversation(ws, "old-chat", "gpt-4o", 1, b"{}", OLD)
        store.put_conversation(ws, "new-chat", "gpt-4o", 1, b"{}", NEW)
        store.put_sent(ws, "old-chat", 1, b"{}", OLD)  # what their last turns sent
        store.put_sent(ws, "new-chat", 1, b"{}", NEW)
        store.put_moved(ws, "c-old-summary", "c-chat", OLD)  # its chat has no window
        store.put_moved(ws, "c-new-summary", "c-chat", NEW)
        store.put_moved(ws, "c-old-map", "new-chat", OLD)  # its chat's window is kept
        store.put_conversation(ws, "c-x-1f2a3", "gpt-4o", 1, b"{}", NEW)  # a fork of c-x
        store.put_moved(ws, "c-old-fork", "c-x", OLD)
        store.put_answer(ws, "resp_old", "old-chat", OLD)
        store.put_answer(ws, "resp_new", "new-chat", NEW)

    assert store.forget("/ws/a", CUT) == (3, 1)
    assert store.forget("/ws/a", CUT) == (0, 0)  # nothing left to forget
    a, b = rows["/ws/a"].sid, rows["/ws/b"].sid
    assert [e.message_id for e in store.audit(a)] == ["m4", "m3"]
    assert len(store.audit(b)) == 5
    assert store.conversation("/ws/a", "old-chat") is None
    assert store.conversation("/ws/a", "new-chat") is not None
    assert store.conversation("/ws/b", "old-chat") is not None
    assert store.sent_of("/ws/a", ["old-chat", "new-chat"]) == {"new-chat": (1, b"{}")}
    assert store.sent_of("/ws/b", ["old-chat"]) == {"old-chat": (1, b"{}")}
    assert store.moved("/ws/a", "c-old-summary") is None
    assert store.moved("/ws/a", "c-new-summary") == store.moved("/ws/b", "c-old-summary") \
        == "c-chat"
    assert store.moved("/ws/a", "c-old-map") == "new-chat"
    assert store.moved("/ws/a", "c-old-fork") == "c-x"
    assert store.answered("/ws/a", "resp_old") is None
    assert store.answered("/ws/a", "resp_new") == "new-chat"
    assert store.answered("/ws/b", "resp_old") == "old-chat"
    assert [m.content for _, m, _ in store.messages(a)] == ["keep me"]
    assert [r.id for r in store.rules(a)] == ["r1"]
    assert store.get("/ws/a", "chat") is not None
    assert _count(store, "SELECT count(*) FROM sessions") == 2
    store.close()


def test_old_windows_are_found_by_time_without_reading_any_window(tmp_path) -> None:
    store = SessionStore(tmp_path)
    for k in range(3):
        store.put_conversation("/ws", f"c{k}", "gpt-4o", 1, b"w" * 50_000, OLD if k else NEW)
    with store._tx() as c:
        plan = " ".join(str(r) for r in c.execute(
            "EXPLAIN QUERY PLAN SELECT 1 FROM conversations INDEXED BY conversations_by_time "
            "WHERE workspace = ? AND updated_at < ?", ("/ws", CUT)))
    assert "conversations_by_time" in plan and "updated_at<?" in plan.replace(" ", "")
    reads = []
    store._conn.set_trace_callback(reads.append)
    assert store.forget("/ws", CUT) == (0, 2)
    store._conn.set_trace_callback(None)
    assert any("INDEXED BY conversations_by_time" in sql for sql in reads)
    assert _count(store, "SELECT count(*) FROM conversations") == 1
