"""ctx/inspect of a gateway chat: its page marks where the request's cached prefix ends."""

from __future__ import annotations

import json
from pathlib import Path

from gateway_stack import Stack, prose, small_stack

from ctxlayer import protocol
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
