"""A new chat after a restart and the windows other chats kept in the state folder
(state/upkeep.py `Upkeep.forks_of`): it starts from the one its messages agree with the
furthest, of those that read; it decodes whole only that one. A real State on a temporary
state folder, closed and opened again, the real tokenizer and SQLite.

Before, every new chat decoded the workspace's 8 most recent windows whole, to take up one at
most: 1.7 to 3.4 ms of its first request for 72 KB windows (bench/newchat_bench.py --kept 8)."""

from __future__ import annotations

import json
import logging
import random
import sqlite3

from test_conversations import MODEL, grow

from ctxlayer import protocol
from ctxlayer.core.prepare import persist
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import chats


def ask(st: State, messages: list[dict], cid: str) -> protocol.PrepareResult:
    return chats.prepare(Caller(st, source="prepare", options=protocol.InitializationOptions(
        model=MODEL)), protocol.PrepareParams(format="ctxlayer", request={
            "messages": messages}, budget=3000, conversation_id=cid))


def went_on(messages: list[dict], seed: int, turns: int, start: int) -> list[list[dict]]:
    """The requests of a chat that goes on from ``messages`` for ``turns`` turns."""
    r, out = random.Random(seed), []
    for t in range(start, start + turns):
        out.append(messages)
        messages = grow(messages, r, t)
    return out


async def kept(tmp_path) -> list[dict]:
    """Two chats kept in the state folder, "a" and "b", b a fork of a at its 20th turn, both
    summarized; a's next request (which agrees with a's window the furthest)."""
    a = went_on([{"role": "user", "id": "u0", "content": "Where is the cache built?"}], 11, 40,
                0)
    b = went_on(a[20], 12, 20, 20)
    st = State(tmp_path / "state")
    try:
        for t in range(39):
            last_a = await ask(st, a[t], "a")
        for t in range(19):
            last_b = await ask(st, b[t], "b")
        assert last_a.compacted and last_b.compacted
        await st.conversations.settled()
    finally:
        st.close()
    return a[39]


def spoil(tmp_path, cid: str) -> None:
    """Make the window kept under ``cid`` one that reads only in part: its summaries are not
    what a window keeps (as a window a newer version wrote may read)."""
    db = sqlite3.connect(tmp_path / "state" / "sessions.sqlite3")
    with db:
        body = json.loads(db.execute("SELECT body FROM conversations WHERE conversation_id=?",
                                     (cid,)).fetchone()[0])
        body["chunks"] = 7
        db.execute("UPDATE conversations SET body=? WHERE conversation_id=?",
                   (json.dumps(body).encode(), cid))
    db.close()


async def started_from(tmp_path, messages: list[dict], caplog) -> list[str]:
    """The ids of the windows a new chat's first request after a restart started from."""
    again = State(tmp_path / "state")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ctxlayer.state.conversations"):
        try:
            await ask(again, messages, "new")
            await again.conversations.settled()
        finally:
            again.close()
    return [r.getMessage().rsplit(" ", 1)[1] for r in caplog.records
            if "starts from the window of" in r.getMessage()]


async def test_a_new_chat_starts_from_the_window_that_agrees_the_furthest(tmp_path, caplog):
    asked = await kept(tmp_path)
    assert await started_from(tmp_path, [*asked], caplog) == ["a"]


async def test_a_window_that_does_not_read_whole_is_passed_over_for_the_next(tmp_path, caplog):
    """As when every window was decoded whole, one that did not being skipped: the fork
    starts from b's window (it agrees less far), not afresh, nor from the broken one."""
    asked = await kept(tmp_path)
    spoil(tmp_path, "a")
    assert await started_from(tmp_path, asked, caplog) == ["b"]


async def test_a_new_chat_that_agrees_with_no_window_decodes_none_whole(tmp_path, caplog,
                                                                        monkeypatch):
    await kept(tmp_path)
    decoded: list[bytes] = []
    whole = persist.decode
    monkeypatch.setattr(persist, "decode", lambda data: decoded.append(data) or whole(data))
    other = [{"role": "system", "content": "You are another assistant."},
             {"role": "user", "content": "A chat of its own."}]
    assert await started_from(tmp_path, other, caplog) == []
    assert decoded == []
