"""A session row this version cannot read: one a newer ctxlayer wrote into the shared state
folder (a Message field this one does not know), or one whose bytes changed on disk (SQLite
has no row checksum: `quick_check` passes). Before, every request of that session, even
ctx/session/close, answered -32603 with a traceback; a newer version's row broke it for good.
Now a newer version's fields are read past (and kept in the row), a row that does not read is
-32005 naming the session and the row, the session closes, and a kept compaction or calibration
that does not read is left out with a warning. The real daemon over stdio, restarted on the
state folder it wrote."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from conftest import RawDaemon, hermetic_env, make_repo

from ctxlayer import protocol


async def started(env: dict[str, str], repo: Path) -> RawDaemon:
    daemon = await RawDaemon.start(env=env)
    await daemon.initialize(repo)
    return daemon


async def written(tmp_path: Path, **append: object) -> tuple[dict[str, str], Path, Path]:
    """A state folder holding session `s` (five messages, a rule, an assembly and a usage
    report) and session `other`, written by a daemon that then stopped."""
    env = hermetic_env(tmp_path / "world")
    repo = make_repo(tmp_path / "repo")
    daemon = await started(env, repo)
    try:
        await daemon.request(1, "ctx/session/open", {"sessionId": "s"})
        await daemon.request(2, "ctx/session/addRule", {"sessionId": "s",
                                                       "rule": {"text": "Never use eval"}})
        for i in range(5):
            got = await daemon.request(10 + i, "ctx/session/append", {
                "sessionId": "s", **append, "messages": [{
                    "role": "user" if i % 2 == 0 else "assistant",
                    "content": f"turn {i} " + "word " * 40, "id": f"m{i}"}]})
            assert "result" in got, got
        assert "result" in await daemon.request(20, "ctx/assemble", {"sessionId": "s"})
        await daemon.request(21, "ctx/session/reportUsage", {"sessionId": "s",
                                                            "promptTokens": 400})
        await daemon.request(22, "ctx/session/open", {"sessionId": "other"})
        await daemon.request(23, "ctx/session/append", {"sessionId": "other", "messages": [
            {"role": "user", "content": "fine", "id": "o"}]})
    finally:
        assert await daemon.close() == 0
    return env, repo, tmp_path / "world" / "state" / "sessions.sqlite3"


def changed(db: Path, sql: str, *args: object) -> None:
    """The state folder's file changed behind ctxlayer's back, as after a crash (so that the
    next open checks it)."""
    conn = sqlite3.connect(db)
    try:
        assert conn.execute(sql, args).rowcount >= 1
        conn.commit()
    finally:
        conn.close()
    db.with_name(db.name + ".closed").unlink(missing_ok=True)


def no_traceback(answer: dict) -> None:
    assert "traceback" not in json.dumps(answer), answer


async def test_a_row_a_newer_ctxlayer_wrote_is_read_past_and_kept_as_it_was(tmp_path):
    env, repo, db = await written(tmp_path)
    newer = {"role": "assistant", "content": "an answer citing the docs", "id": "m5",
             "citations": [{"url": "https://example.com"}],
             "toolCalls": [{"id": "c1", "name": "read", "arguments": "{}", "cached": True}]}
    changed(db, "INSERT INTO messages (sid, seq, body, tokens) SELECT sid, 5, ?, 9 FROM "
            "sessions WHERE session_id='s'", json.dumps(newer).encode())
    changed(db, "UPDATE sessions SET next_seq=6 WHERE session_id='s'")
    daemon = await started(env, repo)
    try:
        opened = await daemon.request(1, "ctx/session/open", {"sessionId": "s"})
        assert "result" in opened, opened
        got = await daemon.request(2, "ctx/assemble", {"sessionId": "s"})
        assert "result" in got, got
        sent = got["result"]["messages"]
        assert any(m["content"] == newer["content"] and m["toolCalls"][0]["id"] == "c1"
                   for m in sent), sent
        more = await daemon.request(3, "ctx/session/append", {"sessionId": "s", "messages": [
            {"role": "user", "content": "and then?", "id": "m6"}]})
        assert "result" in more, more
        # another model: every row counted again, written back with its tokens only
        assert "result" in await daemon.request(4, "ctx/session/configure", {
            "sessionId": "s", "model": "claude-sonnet-4-5"})
        assert "result" in await daemon.request(5, "ctx/session/close", {"sessionId": "s"})
    finally:
        assert await daemon.close() == 0
    conn = sqlite3.connect(db)
    body = conn.execute("SELECT body FROM messages WHERE seq=5").fetchone()[0]
    conn.close()
    assert json.loads(body) == newer  # the newer version's fields are still there


async def test_a_message_whose_bytes_changed_is_named_and_its_session_closes(tmp_path):
    env, repo, db = await written(tmp_path)
    conn = sqlite3.connect(db)
    body = conn.execute("SELECT body FROM messages WHERE seq=2").fetchone()[0]
    conn.close()
    changed(db, "UPDATE messages SET body=? WHERE seq=2",
            body.replace(b'"role"', b'"rol\xe5"', 1))  # one byte: not UTF-8 any more
    daemon = await started(env, repo)
    try:
        for k, (method, params) in enumerate([
                ("ctx/session/open", {"sessionId": "s"}), ("ctx/assemble", {"sessionId": "s"}),
                ("ctx/session/append", {"sessionId": "s", "messages": [
                    {"role": "user", "content": "more"}]})]):
            got = await daemon.request(k, method, params)
            no_traceback(got)
            assert got["error"]["code"] == protocol.ERROR_STORE, got
            said = got["error"]["message"]
            assert "message 2 of session 's'" in said and "does not read" in said, said
        # the way out it names: the session closes, and the others go on
        assert "result" in await daemon.request(10, "ctx/session/close", {"sessionId": "s"})
        assert "result" in await daemon.request(11, "ctx/assemble", {"sessionId": "other"})
        assert "result" in await daemon.request(12, "ctx/session/open", {"sessionId": "new"})
    finally:
        assert await daemon.close() == 0


async def test_a_rule_that_does_not_read_is_named(tmp_path):
    env, repo, db = await written(tmp_path)
    changed(db, "UPDATE rules SET body=?", b"\x00garbage{")
    daemon = await started(env, repo)
    try:
        got = await daemon.request(1, "ctx/session/open", {"sessionId": "s"})
        no_traceback(got)
        assert got["error"]["code"] == protocol.ERROR_STORE, got
        assert "rule rule-0 of session 's'" in got["error"]["message"], got
    finally:
        assert await daemon.close() == 0


async def test_a_kept_compaction_or_calibration_that_does_not_read_is_left_out(tmp_path):
    env, repo, db = await written(tmp_path)
    changed(db, "UPDATE sessions SET compaction=?, calibration=? WHERE session_id='s'",
            b"\x00{garbage", b"\x00{garbage")
    daemon = await started(env, repo)
    try:
        assert "result" in await daemon.request(1, "ctx/session/open", {"sessionId": "s"})
        got = await daemon.request(2, "ctx/assemble", {"sessionId": "s"})
        assert "result" in got, got
        assert any(m.get("id") == "m4" for m in got["result"]["messages"])
        assert "result" in await daemon.request(3, "ctx/session/reportUsage", {
            "sessionId": "s", "promptTokens": 400})
    finally:
        assert await daemon.close() == 0


async def test_a_provider_message_that_does_not_read_is_named(tmp_path):
    env, repo, db = await written(tmp_path, format="anthropic")
    changed(db, "UPDATE messages SET raw=? WHERE raw IS NOT NULL", b"\x00garbage{")
    daemon = await started(env, repo)
    try:
        assert "result" in await daemon.request(1, "ctx/session/open", {"sessionId": "s"})
        got = await daemon.request(2, "ctx/assemble", {"sessionId": "s"})
        no_traceback(got)
        assert got["error"]["code"] == protocol.ERROR_STORE, got
        assert "the provider message of message" in got["error"]["message"], got
    finally:
        assert await daemon.close() == 0


async def test_an_audit_entry_that_does_not_read_is_left_out_of_the_audit_alone(tmp_path):
    # an action a newer version names ("elided") made ctx/session/audit -32005 for the whole
    # session, advising to close it, while the session itself worked
    env, repo, db = await written(tmp_path)
    entry = {"action": "dropped", "reason": "over budget", "summary": "user: turn 0",
             "tokensBefore": 40, "tokensAfter": 0, "messageId": "m0"}
    conn = sqlite3.connect(db)
    try:
        (sid,) = conn.execute("SELECT sid FROM sessions WHERE session_id='s'").fetchone()
        for body in (entry, {**entry, "action": "elided"}, entry):
            conn.execute("INSERT INTO audit (sid, at, body) VALUES (?, ?, ?)",
                         (sid, "2026-12-06T00:00:00Z", json.dumps(body).encode()))
        total = conn.execute("SELECT COUNT(*) FROM audit WHERE sid=?", (sid,)).fetchone()[0]
        conn.commit()
    finally:
        conn.close()
    daemon = await started(env, repo)
    try:
        got = await daemon.request(1, "ctx/session/audit", {"sessionId": "s"})
        assert "result" in got, got
        assert len(got["result"]["entries"]) == total - 1
    finally:
        assert await daemon.close() == 0
