"""The conversations the state folder keeps are listed and explained after a restart, before
their chat sends another turn (`ctxlayer chats` reads ctx/conversations and ctx/why): a real
State on a temporary folder, closed and opened again, the real tokenizer and SQLite."""

from __future__ import annotations

import random

import msgspec
import pytest
from test_conversations import MODEL, SYSTEM, grow, params

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import call, chats


def turn(messages: list[dict], cid: str) -> protocol.PrepareParams:
    return msgspec.structs.replace(params(messages), conversation_id=cid)


def caller_of(st: State) -> Caller:
    return Caller(st, source="prepare", options=protocol.InitializationOptions(model=MODEL))


async def a_chat(caller: Caller, cid: str, turns: int, seed: int) -> list[dict]:
    r = random.Random(seed)
    messages = [SYSTEM, {"role": "user", "id": "u0", "content": f"Where is {cid} built?"}]
    for t in range(turns):
        await chats.prepare(caller, turn(messages, cid))
        messages = grow(messages, r, t)
    return messages


def summarized(entries: list[protocol.AuditEntry]) -> set[str | None]:
    return {e.message_id for e in entries if e.action == "summarized"}


async def why(caller: Caller, **ids) -> list[protocol.AuditEntry]:
    return (await call(caller, "ctx/why", protocol.WhyParams(**ids))).entries


async def test_kept_conversations_are_listed_and_explained_after_a_restart(tmp_path):
    st = State(tmp_path / "state")
    caller = caller_of(st)
    try:
        await a_chat(caller, "c1", 40, 1)
        messages = await a_chat(caller, "c2", 40, 2)
        listed = (await chats.conversations(caller, protocol.Empty())).conversations
        before = await why(caller, conversation_id="c1")
        assert [c.conversation_id for c in listed] == ["c2", "c1"]
        assert "u1" in summarized(before)
        await st.conversations.settled()
    finally:
        st.close()
    again = State(tmp_path / "state")
    caller = caller_of(again)
    try:
        kept = (await chats.conversations(caller, protocol.Empty())).conversations
        assert kept == listed, "as they were listed before the restart, most recent first"
        after = await why(caller, conversation_id="c1")
        assert summarized(after) == summarized(before)
        one = await why(caller, conversation_id="c1", message_id="u1")
        assert [(e.action, e.message_id) for e in one] == [("summarized", "u1")]
        # an id the turn did not hold is said, as for a chat in memory: no entries would read
        # as "kept whole"
        with pytest.raises(ContextError) as err:
            await why(caller, conversation_id="c1", message_id="no-such-message")
        assert (err.value.kind, err.value.field) == ("invalid", "messageId")
        newest = messages[-3]["id"]  # a_chat grew it by two after its last turn
        assert await why(caller, conversation_id="c2", message_id=newest) == [], \
            "the newest message of the turn, kept whole: no entries, no error"
        by_session = await why(caller, session_id="chat-c1")
        assert summarized(by_session) == summarized(before)
        with pytest.raises(ContextError) as err:
            await why(caller, conversation_id="never")
        assert err.value.kind == "unknown_session"
        # its next turn takes it up again; listed once
        await chats.prepare(caller, turn(messages, "c2"))
        now = (await chats.conversations(caller, protocol.Empty())).conversations
        assert [c.conversation_id for c in now] == ["c2", "c1"]
    finally:
        again.close()


async def test_a_retry_is_listed_after_a_restart_as_before(tmp_path):
    """A chat whose last request was the one before sent again (a retry) is listed after a
    clean restart as it was before: the retry's cache reuse and time, not those of the turn
    that wrote its window. Before, the retry wrote nothing and the close took the window
    written by the turn it repeated (one that summarized) for its last: listed with 0 reused
    and the older time."""
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "id": f"m{i}",
                 "content": f"MSG{i} " + "lorem ipsum dolor " * 40} for i in range(21)]
    request = msgspec.structs.replace(params(messages, budget=1200), conversation_id="c1")
    st = State(tmp_path / "state")
    caller = caller_of(st)
    try:
        first = await chats.prepare(caller, request)
        assert first.dropped, "the turn summarized: its window is written"
        again = await chats.prepare(caller, request)
        assert again.cache_reuse_tokens > first.cache_reuse_tokens
        listed = (await chats.conversations(caller, protocol.Empty())).conversations
        assert listed[0].cache_reuse_tokens == again.cache_reuse_tokens
        await st.conversations.settled()
    finally:
        st.close()
    reopened = State(tmp_path / "state")
    try:
        kept = (await chats.conversations(caller_of(reopened), protocol.Empty())).conversations
        assert kept == listed
    finally:
        reopened.close()
