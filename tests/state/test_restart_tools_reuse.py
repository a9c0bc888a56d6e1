"""The tool definitions open the prompt the provider caches: a turn whose tools (and tool
choice) are the request's before counts them in its cache reuse. After a restart the request
before is not in memory; what the state folder kept of it says whether they are the same, so
the first turn after a restart says the reuse a daemon that never restarted says (before, 25
tokens less in the stateful probe: the tools' size, each time). A real State and tokenizer,
OpenAI Chat Completions requests as a client sends them, with and without a step in between
(a kept window, and a window with what a later turn sent as the change from it)."""

from __future__ import annotations

import pytest

from ctxlayer import protocol
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import chats

MODEL = "gpt-4o"
TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the workspace and return its text.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                   "required": ["path"]}}}]


def requests(turns: int) -> list[list[dict]]:
    msgs: list[dict] = [{"role": "system", "content": "You help with code."}]
    out = []
    for k in range(turns):
        msgs = [*msgs, {"role": "user", "content": f"question {k}: " + "why so slow " * 30}]
        out.append(msgs)
        msgs = [*msgs, {"role": "assistant", "content": f"answer {k}: " + "it waits " * 30}]
    return out


async def turn(state: State, msgs: list[dict], budget: int, **request
               ) -> protocol.PrepareResult:
    caller = Caller(state, source="prepare", options=protocol.InitializationOptions(model=MODEL))
    return await chats.prepare(caller, protocol.PrepareParams(
        format="openai", conversation_id="c", budget=budget,
        request={"model": MODEL, "messages": msgs, "tools": TOOLS, **request}))


@pytest.mark.parametrize("budget", [100_000, 900], ids=["kept-window", "after-steps"])
async def test_the_first_turn_after_a_restart_reuses_the_tools_as_before(tmp_path, budget):
    chat = requests(8)
    ref_state = State(tmp_path / "reference")
    try:
        ref = [await turn(ref_state, msgs, budget) for msgs in chat]
    finally:
        ref_state.close()
    assert ref[-1].cache_reuse_tokens > 0

    state = State(tmp_path / "state")
    try:
        for msgs in chat[:-1]:
            await turn(state, msgs, budget)
        await state.conversations.settled()
    finally:
        state.close()
    again = State(tmp_path / "state")
    try:
        after = await turn(again, chat[-1], budget)
    finally:
        again.close()
    assert after.request == ref[-1].request
    assert after.cache_reuse_tokens == ref[-1].cache_reuse_tokens


async def test_other_tools_after_a_restart_are_not_reused(tmp_path):
    """A restart between two requests whose tool choice differs: the tools are no part of
    the reuse, as without the restart."""
    chat = requests(3)
    state = State(tmp_path / "state")
    try:
        for msgs in chat[:-1]:
            await turn(state, msgs, 100_000)
        await state.conversations.settled()
    finally:
        state.close()
    again = State(tmp_path / "state")
    try:
        after = await turn(again, chat[-1], 100_000, tool_choice="required")
    finally:
        again.close()
    ref_state = State(tmp_path / "reference")
    try:
        for msgs in chat[:-1]:
            await turn(ref_state, msgs, 100_000)
        ref = await turn(ref_state, chat[-1], 100_000, tool_choice="required")
    finally:
        ref_state.close()
    assert after.cache_reuse_tokens == ref.cache_reuse_tokens > 0


async def fork(state: State, msgs: list[dict], budget: int) -> protocol.PrepareResult:
    caller = Caller(state, source="prepare", options=protocol.InitializationOptions(model=MODEL))
    return await chats.prepare(caller, protocol.PrepareParams(
        format="openai", conversation_id="fork", budget=budget,
        request={"model": MODEL, "messages": msgs, "tools": TOOLS}))


@pytest.mark.parametrize("restart", [False, True], ids=["in-memory", "after-a-restart"])
async def test_a_fork_reuses_the_tools_of_the_chat_it_starts_from(tmp_path, restart):
    """A new chat that starts from another chat's window (Claude Code's `--fork-session`:
    another session id, the parent's last request and a new question) sends the tools that
    chat's last request sent: they are reused as the chat's own next turn reuses them. Before,
    with no request of its own before and no window of its own taken up, the fork's first
    estimate left them out (Claude Code's 8,746 tokens of tools: 22.3k said of 30,970)."""
    chat = requests(9)
    ref_state = State(tmp_path / "reference")
    try:
        for msgs in chat:
            ref = await turn(ref_state, msgs, 900)
    finally:
        ref_state.close()
    assert ref.compacted and ref.cache_reuse_tokens > 0

    state = State(tmp_path / "state")
    try:
        for msgs in chat[:-1]:
            await turn(state, msgs, 900)
        await state.conversations.settled()
        if restart:
            state.close()
            state = State(tmp_path / "state")
        forked = await fork(state, chat[-1], 900)
    finally:
        state.close()
    assert forked.request == ref.request
    assert forked.cache_reuse_tokens == ref.cache_reuse_tokens
