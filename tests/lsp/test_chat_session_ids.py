"""A client's session never shares its id with a live chat's (`chat-<conversationId>`).

Before: an editor opened `ctx/session/open {sessionId: "chat-foo"}`, appended and assembled;
then another client's `ctx/prepare {conversationId: "foo"}` answered `sessionId: "chat-foo"`,
the same session. From then on `ctx/why` of that session answered 0 entries (8 before) and
`ctx/restore` of its message m1 failed "no message 'm1' in the last turn of conversation
'foo'": the chat had taken the client's audit and restores over. Now no new session may take
a `chat-` id (-32602 naming sessionId), while the requests on a chat's session by the id
ctx/prepare answered work as before, and a session a state folder already holds under such an
id (made before the prefix was kept) is opened again with its messages.
The real daemon over stdio."""

from __future__ import annotations

import itertools
import sqlite3

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result
from conftest import ask as call

pytestmark = pytest.mark.e2e
_worlds = itertools.count()

MESSAGES = [{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant",
             "content": f"MSG{i} " + "lorem ipsum dolor " * 40} for i in range(9)]




async def test_a_client_cannot_open_a_session_under_a_chats_id(own_daemon):
    refused = await call(own_daemon, "ctx/session/open", {"sessionId": "chat-foo",
                                                          "budget": 400})
    assert "error" in refused and refused["error"]["code"] == -32602, refused
    assert refused["error"]["data"]["field"] == "sessionId", refused
    assert "chat-" in refused["error"]["message"], refused
    # the client's session under an id of its own keeps its audit beside the chat
    await result(own_daemon, "ctx/session/open", {"sessionId": "foo", "budget": 400})
    await result(own_daemon, "ctx/session/append", {"sessionId": "foo", "messages": MESSAGES})
    await result(own_daemon, "ctx/assemble", {"sessionId": "foo"})
    before = (await result(own_daemon, "ctx/why", {"sessionId": "foo"}))["entries"]
    assert before, "the assembly at 400 tokens cut nothing"
    prepared = await result(own_daemon, "ctx/prepare", {
        "format": "openai", "conversationId": "foo",
        "request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "Q"}]}})
    assert prepared["sessionId"] == "chat-foo"
    assert (await result(own_daemon, "ctx/why", {"sessionId": "foo"}))["entries"] == before
    await result(own_daemon, "ctx/restore", {"sessionId": "foo", "messageId": "m1"})


async def test_the_requests_on_a_chats_session_by_its_id_still_work(own_daemon):
    prepared = await result(own_daemon, "ctx/prepare", {
        "format": "openai", "conversationId": "bar",
        "request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "Q"}]}})
    sid = prepared["sessionId"]
    assert sid == "chat-bar"
    opened = await result(own_daemon, "ctx/session/open", {"sessionId": sid})
    assert opened["sessionId"] == sid  # the chat's, which the state folder holds: opened again
    assert (await result(own_daemon, "ctx/session/budget", {"sessionId": sid}))["limit"] > 0
    await result(own_daemon, "ctx/session/reportUsage", {
        "sessionId": sid, "promptTokens": 12, "estimatedTokens": 10})
    assert "entries" in await result(own_daemon, "ctx/why", {"sessionId": sid})


async def test_a_session_kept_under_a_chat_id_before_is_opened_again_whole():
    """A state folder of an earlier version may hold a client's session named `chat-...`:
    it is neither refused nor lost (the log names it)."""
    base = WORLD / f"chat-ids-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/session/open", {"sessionId": "legacy", "budget": 20000})
        await result(daemon, "ctx/session/append", {"sessionId": "legacy",
                                                    "messages": MESSAGES})
    finally:
        assert await daemon.close() == 0
    with sqlite3.connect(base / "state" / "sessions.sqlite3") as db:  # as an old daemon made it
        db.execute("UPDATE sessions SET session_id='chat-legacy' WHERE session_id='legacy'")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/session/open", {"sessionId": "chat-legacy"})
        out = await result(daemon, "ctx/assemble", {"sessionId": "chat-legacy"})
        ids = {m.get("id") for m in out["messages"]}
        assert {m["id"] for m in MESSAGES} <= ids, ids
    finally:
        assert await daemon.close() == 0
