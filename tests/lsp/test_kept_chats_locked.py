"""A chat kept only in the state folder (the daemon restarted), read while another process
holds the sessions database locked: ctx/conversations and ctx/why answer the store's error
(-32005), as ctx/inspect and ctx/session/budget did. Before, after the lock's timeout (5 s),
ctx/conversations answered {"conversations": []} and ctx/why -32002 "no live conversation",
as if the chat were none. The real daemon over stdio, a real second connection holding
`BEGIN EXCLUSIVE`."""

from __future__ import annotations

import sqlite3

import pytest
from conftest import WORLD, RawDaemon, ask, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e


async def test_a_kept_chat_behind_a_lock_is_a_store_error_not_none():
    base = WORLD / "kept-chats-locked"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        prepared = await result(daemon, "ctx/prepare", {
            "format": "openai", "budget": 3000,
            "request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi " * 50}]}})
    finally:
        assert await daemon.close() == 0
    cid, sid = prepared["conversationId"], prepared["sessionId"]
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        listed = await result(daemon, "ctx/conversations", {})
        assert [c["conversationId"] for c in listed["conversations"]] == [cid]
        other = sqlite3.connect(base / "state" / "sessions.sqlite3", isolation_level=None,
                                timeout=30)
        other.execute("BEGIN EXCLUSIVE")
        try:
            answers = [await ask(daemon, "ctx/conversations", {}),
                       await ask(daemon, "ctx/why", {"conversationId": cid}),
                       await ask(daemon, "ctx/session/budget", {"sessionId": sid})]
        finally:
            other.execute("ROLLBACK")
            other.close()
        for answer in answers:
            error = answer.get("error")
            assert error is not None, answer
            assert error["code"] == -32005 and error["data"] == {"kind": "store"}, error
            assert "the database is locked by another process" in error["message"], error
        # the lock let go, the kept chat reads again
        why = await result(daemon, "ctx/why", {"conversationId": cid})
        assert why == {"entries": []}
    finally:
        assert await daemon.close() == 0
