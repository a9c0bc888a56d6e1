"""The first requests after a restart that edit, rewind or fork a live chat get what a daemon
that never restarted gives them: the same body and the same cache reuse, under the same id.

Before, the stateful probe against a daemon that never restarted found: an edit of a named
chat's first question right after a restart said 0 reused where the other said its system
prompt (32 tokens here); a rewind past what the window's summaries stand for went on under a
new id with 0 reused (32); a new chat forked off a chat kept before the restart (another
conversation id, another client session) started afresh, 0 reused where the other started
from that chat's window (413). The real daemon over stdio, stopped and started again on its
state folder, beside one that runs throughout."""

from __future__ import annotations

import itertools

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e
_worlds = itertools.count()
SYSTEM = ("You are a careful coding assistant. Answer briefly, cite the files you read, and "
          "never invent an API that the project does not have.")


def chat(turns: int, edited: int | None = None) -> list[dict]:
    messages = [{"role": "system", "content": SYSTEM}]
    for i in range(turns):
        question = f"question {i}: how does part {i} work " + "and why " * 5
        messages.append({"role": "user",
                         "content": ("EDITED " if i == edited else "") + question})
        if i < turns - 1:
            messages.append({"role": "assistant",
                             "content": f"answer {i}: " + f"it works w{i} " * 20})
    return messages


def forked(turns: int) -> list[dict]:
    """``chat(turns)`` with another last question: a second chat off the first."""
    return [*chat(turns)[:-1], {"role": "user", "content": "a different question " * 4}]


class Pair:
    """A daemon stopped and started again on its state folder, and one that runs throughout,
    sent the same requests."""

    def __init__(self, name: str) -> None:
        self.base = WORLD / f"edit-restart-{name}-{next(_worlds)}"
        self.env = hermetic_env(self.base / "stopped")
        self.root = make_repo(self.base / "repo")
        self.daemons: list[RawDaemon] = []

    async def start(self) -> None:
        for env in (self.env, hermetic_env(self.base / "control")):
            daemon = await RawDaemon.start(env=env)
            await daemon.initialize(self.root, model="gpt-4o")
            self.daemons.append(daemon)

    async def restart(self) -> None:
        assert await self.daemons[0].close() == 0
        self.daemons[0] = await RawDaemon.start(env=self.env)
        await self.daemons[0].initialize(self.root, model="gpt-4o")

    async def both(self, messages: list[dict], budget: int, **params) -> tuple[dict, dict]:
        out = [await result(d, "ctx/prepare", {
            "format": "openai", "budget": budget, **params,
            "request": {"model": "gpt-4o", "messages": messages}}) for d in self.daemons]
        return out[0], out[1]

    async def close(self) -> None:
        for daemon in self.daemons:
            assert await daemon.close() == 0


def alike(mine: dict, theirs: dict) -> None:
    assert mine["request"] == theirs["request"]
    assert mine["conversationId"] == theirs["conversationId"]
    assert (mine["cacheReuseTokens"], mine["tokens"]) == \
        (theirs["cacheReuseTokens"], theirs["tokens"])


@pytest.mark.parametrize("budget", [100_000, 500], ids=["whole", "summarized"])
async def test_an_edit_of_a_named_chat_after_a_restart_reuses_its_system_prompt(budget):
    pair = Pair("named")
    await pair.start()
    try:
        for t in range(1, 7):
            await pair.both(chat(t), budget, conversationId="named")
        await pair.restart()
        mine, theirs = await pair.both(chat(6, edited=0), budget, conversationId="named")
        alike(mine, theirs)
        assert theirs["cacheReuseTokens"] > 0
        alike(*await pair.both(chat(7, edited=0), budget, conversationId="named"))
    finally:
        await pair.close()


@pytest.mark.parametrize("hint", [{}, {"clientSessionId": "s1"}], ids=["opening", "session"])
async def test_a_rewind_past_the_summaries_after_a_restart_goes_on_in_its_chat(hint):
    pair = Pair("rewind")
    await pair.start()
    try:
        for t in range(1, 7):
            await pair.both(chat(t), 500, **hint)
        await pair.restart()
        mine, theirs = await pair.both(chat(1), 500, **hint)
        alike(mine, theirs)
        assert theirs["cacheReuseTokens"] > 0
        alike(*await pair.both(chat(2), 500, **hint))
    finally:
        await pair.close()


@pytest.mark.parametrize("ids", [("conversationId", "one", "two"),
                                 ("clientSessionId", "s1", "s2")], ids=["named", "session"])
async def test_a_fork_of_a_chat_kept_before_a_restart_starts_from_its_window(ids):
    key, first, second = ids
    pair = Pair("fork")
    await pair.start()
    try:
        for t in range(1, 8):
            await pair.both(chat(t), 700, **{key: first})
        await pair.restart()
        mine, theirs = await pair.both(forked(7), 700, **{key: second})
        alike(mine, theirs)
        assert theirs["cacheReuseTokens"] > 0
        later = [*forked(7), {"role": "assistant", "content": "ok"},
                 {"role": "user", "content": "and then?"}]
        alike(*await pair.both(later, 700, **{key: second}))
    finally:
        await pair.close()
