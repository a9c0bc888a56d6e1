"""ctx/inspect of a gateway chat: its page marks where the request's cached prefix ends, and
a chat that is not in memory (after a restart, or let go for newer chats) is never shown as
an empty page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gateway_stack import Stack, prose, small_stack

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.state.requests import call


def talk(stack: Stack, conversation: str, turns: int, history: list | None = None) -> list:
    """``turns`` more questions and answers of a chat through the gateway (Anthropic)."""
    client = stack.anthropic()
    history = [] if history is None else history
    for _ in range(turns):
        history.append({"role": "user", "content": prose(f"{conversation}-q{len(history)}", 120)})
        answer = client.messages.create(
            model="standin-small", max_tokens=256, system="You are terse.", messages=history,
            extra_headers={"x-ctxlayer-conversation": conversation})
        history.append({"role": "assistant", "content": answer.content[0].text})
    return history


def inspect(stack: Stack, session_id: str) -> str:
    async def go() -> str:
        return (await call(stack.gateway.caller, "ctx/inspect",
                           protocol.InspectParams(session_id=session_id))).html
    return stack.thread.call(go())


def listed(stack: Stack) -> dict[str, protocol.ConversationInfo]:
    async def go() -> protocol.ConversationsResult:
        return await call(stack.gateway.caller, "ctx/conversations", protocol.Empty())
    return {c.conversation_id: c for c in stack.thread.call(go()).conversations}


def why(stack: Stack, conversation: str) -> list[protocol.AuditEntry]:
    async def go() -> protocol.WhyResult:
        return await call(stack.gateway.caller, "ctx/why",
                          protocol.WhyParams(conversation_id=conversation))
    return stack.thread.call(go()).entries


def page_data(html: str) -> dict:
    return json.loads(html.split('id="ctx-data">', 1)[1].split("</script>", 1)[0])


def test_a_live_chats_page_marks_where_its_cached_prefix_ends(tmp_path: Path) -> None:
    """The reported bug: the live chat's page had no cache boundary (the README promises
    one). It is where the prefix its result shared with the previous one ends: the figure
    `ctxlayer chats` calls est. cache."""
    with small_stack(tmp_path) as stack:
        talk(stack, "cached", 20)
        info = listed(stack)["cached"]
        html = inspect(stack, info.session_id)
    data = page_data(html)
    assert info.cache_reuse_tokens > 0 and info.dropped > 0  # summarized, and mostly cached
    boundary = data.get("cacheBoundary")
    assert boundary is not None and 0 < boundary < len(data["messages"]), boundary
    assert data["cacheTokens"] == info.cache_reuse_tokens
    assert f"cache boundary ({info.cache_reuse_tokens:,})" in html
    assert html.count('id="cache-boundary"') == 1
    row = html.split('id="cache-boundary"', 1)[1].split('<li class="msg" ', 1)[1]
    assert row.startswith(f'data-index="{boundary}"')  # drawn above the row it names
    # the newest question was never sent before: it cannot be in the cached prefix
    assert boundary <= len(data["messages"]) - 1


def test_a_chat_kept_only_on_disk_is_not_shown_as_an_empty_page(tmp_path: Path) -> None:
    """The reported bug: after a restart, ctx/inspect of a chat `ctxlayer chats` still lists
    answered "session chat-c1: 3 tokens, 0 messages" (its session holds none of its
    messages). It says the chat is not in memory until its next request, with what its last
    turn was; that request brings its page back."""
    with small_stack(tmp_path) as stack:
        history = talk(stack, "c1", 14)
        before = listed(stack)["c1"]
        rows = len(page_data(inspect(stack, "chat-c1"))["messages"])
    with small_stack(tmp_path) as stack:
        assert listed(stack)["c1"] == before  # listed from the window the state folder keeps
        with pytest.raises(ContextError) as err:
            inspect(stack, "chat-c1")
        said = str(err.value)
        assert err.value.kind == "unknown_session" and err.value.field == "sessionId"
        assert "'c1'" in said and "not in memory" in said and "next request" in said
        assert f"{before.tokens:,} / {before.budget:,} tokens" in said
        talk(stack, "c1", 1, history)
        assert len(page_data(inspect(stack, "chat-c1"))["messages"]) == rows + 2


def test_a_chat_let_go_for_newer_ones_is_not_shown_as_an_empty_page(tmp_path: Path) -> None:
    """The same for a chat memory let go of for newer ones (64 of them; 2 here)."""
    with small_stack(tmp_path) as stack:
        stack.state.conversations.max_live = 2
        for chat in ("old", "newer", "newest"):
            talk(stack, chat, 2)
        in_memory = stack.state.conversations.list(stack.gateway.caller.workspace)
        assert [c.conversation_id for c in in_memory] == ["newest", "newer"]
        assert why(stack, "old") == []  # ... answered from its kept window (nothing cut)
        with pytest.raises(ContextError, match="not in memory"):
            inspect(stack, "chat-old")
        assert page_data(inspect(stack, "chat-newest"))["messages"]
