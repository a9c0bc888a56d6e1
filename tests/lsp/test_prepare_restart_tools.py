"""The first request after a restart counts the tool definitions in its cache reuse when it
repeats the request sent last's, as a daemon that never stopped does: the state folder keeps a
hash of them beside the window and what a later turn sent. Before, the request before was not
in memory and the tools were left out: 25 tokens less in each of the stateful probe's chats
with tools (seeds 1, 2, 3, 6). The real daemon over stdio, stopped and started again, beside
one that runs throughout."""

from __future__ import annotations

import itertools

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e
_worlds = itertools.count()
TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the workspace and return its text.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                   "required": ["path"]}}}]


def chat(turns: int) -> list[dict]:
    messages = [{"role": "system", "content": "Helpful."},
                {"role": "user", "content": "question 0"}]
    for i in range(turns):
        messages += [{"role": "assistant", "content": f"answer {i} " + f"word{i} " * 60},
                     {"role": "user", "content": f"question {i + 1}"}]
    return messages


async def turn(daemon: RawDaemon, turns: int, budget: int) -> dict:
    return await result(daemon, "ctx/prepare", {
        "format": "openai", "budget": budget, "conversationId": "tools",
        "request": {"model": "gpt-4o", "messages": chat(turns), "tools": TOOLS}})


async def started(name: str) -> tuple[RawDaemon, dict, object]:
    base = WORLD / f"tools-restart-{name}-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    await daemon.initialize(root)
    return daemon, env, root


@pytest.mark.parametrize("budget", [100_000, 1500], ids=["never-stepped", "stepped"])
async def test_the_tools_count_in_the_reuse_after_a_restart(budget):
    stopped, env, root = await started("stopped")
    control, _, _ = await started("control")
    try:
        for t in range(12):
            await turn(stopped, t, budget), await turn(control, t, budget)
        assert await stopped.close() == 0
        stopped = await RawDaemon.start(env=env)
        await stopped.initialize(root)
        mine, theirs = await turn(stopped, 12, budget), await turn(control, 12, budget)
        assert mine["request"] == theirs["request"]
        assert mine["cacheReuseTokens"] == theirs["cacheReuseTokens"] > 0
    finally:
        assert await stopped.close() == 0
        assert await control.close() == 0


RESPONSES_TOOLS = [{"type": "function", "name": "read_file",
                    "description": "Read a file of the workspace and return its text.",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                   "required": ["path"]}}]


async def provider_turn(daemon: RawDaemon, turn_no: int) -> dict:
    """A Responses request whose history the provider keeps (its `conversation`): only the
    new question is sent, with the tools."""
    return await result(daemon, "ctx/prepare", {"format": "responses", "budget": 100_000,
                                                "request": {
        "model": "gpt-4o", "conversation": "conv_kept", "instructions": "Helpful.",
        "input": [{"role": "user", "content": f"question {turn_no}"}],
        "tools": RESPONSES_TOOLS}})


async def test_a_chat_the_provider_keeps_reuses_its_tools_after_a_restart():
    """A Responses chat whose history the provider keeps takes up no window (nothing to fit),
    and its first turn after a restart said no reuse at all where a daemon that never
    restarted said its tools (45 tokens here, 18 in the stateful probe's chat)."""
    stopped, env, root = await started("provider")
    control, _, _ = await started("provider-control")
    try:
        for t in range(3):
            await provider_turn(stopped, t), await provider_turn(control, t)
        assert await stopped.close() == 0
        stopped = await RawDaemon.start(env=env)
        await stopped.initialize(root)
        mine, theirs = await provider_turn(stopped, 3), await provider_turn(control, 3)
        assert mine["request"] == theirs["request"]
        assert mine["cacheReuseTokens"] == theirs["cacheReuseTokens"] > 0
    finally:
        assert await stopped.close() == 0
        assert await control.close() == 0
