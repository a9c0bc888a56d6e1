"""ctx/session/budget and ctx/session/list of a chat's session say what its chat sent.

Before: ctx/prepare answered 1808 tokens of 2500 and its ctx/budgetChanged said used 1808
(system 4, history 1804), but ctx/session/budget of the sessionId it answered said used 120
(workspace 117, history 0: the workspace's tokens, which a prepared request never carries),
and ctx/session/list listed that session with 0 messages. A chat's session holds none of its
messages (they are the client's), so measuring it said nothing of the chat. Now both answer
the chat's last prepared request, and so after a restart, from the window kept of it.
The real daemon over stdio."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
from collections.abc import AsyncIterator

import pytest
from conftest import WORLD, RawDaemon, ask, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e
_worlds = itertools.count()
FIGURES = ("used", "limit", "percent", "byLayer", "model", "sessionId")


def chat(turns: int) -> list[dict]:
    rng = random.Random(4)
    vocab = "cache token budget parser router queue store index".split()

    def words(n: int) -> str:
        return " ".join(rng.choice(vocab) for _ in range(n))

    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "FIRST " + words(30)}]
    for t in range(turns):
        messages += [{"role": "assistant", "content": f"A{t} " + words(80)},
                     {"role": "user", "content": f"Q{t} " + words(20)}]
    return messages



async def pushed(daemon: RawDaemon, session_id: str) -> dict:
    for _ in range(500):
        mine = [n["params"] for n in daemon.notifications if n["method"] == "ctx/budgetChanged"
                and n["params"].get("sessionId") == session_id]
        if mine:
            return mine[-1]
        await asyncio.sleep(0.01)
    raise AssertionError("the prepared turn pushed no budget")


async def figures(daemon: RawDaemon, session_id: str) -> tuple[dict, int]:
    """What ctx/session/budget says of the session, and the messages ctx/session/list lists."""
    budget = await result(daemon, "ctx/session/budget", {"sessionId": session_id})
    listed = (await result(daemon, "ctx/session/list", {}))["sessions"]
    [messages] = [s["messages"] for s in listed if s["sessionId"] == session_id]
    return {k: budget.get(k) for k in FIGURES}, messages


async def test_a_chats_session_budget_is_its_last_prepared_request_also_after_a_restart():
    base = WORLD / f"chat-budget-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    messages = chat(30)
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        prepared = await result(daemon, "ctx/prepare", {
            "format": "openai", "budget": 2500,
            "request": {"model": "gpt-4o", "messages": messages}})
        sid = prepared["sessionId"]
        told = await pushed(daemon, sid)
        assert told["used"] == prepared["tokens"] and prepared["compacted"]
        live = await figures(daemon, sid)
        assert live == ({k: told.get(k) for k in FIGURES}, len(messages)), (live, told)
    finally:
        assert await daemon.close() == 0
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        assert await figures(daemon, sid) == live  # as its kept window says
    finally:
        assert await daemon.close() == 0


@contextlib.asynccontextmanager
async def a_prepared_chat() -> AsyncIterator[tuple[RawDaemon, dict, dict]]:
    """A daemon, a chat it prepared over its budget, and the budget that turn pushed."""
    base = WORLD / f"chat-budget-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        prepared = await result(daemon, "ctx/prepare", {
            "format": "openai", "budget": 2500,
            "request": {"model": "gpt-4o", "messages": chat(30)}})
        yield daemon, prepared, await pushed(daemon, prepared["sessionId"])
    finally:
        assert await daemon.close() == 0


async def test_set_mode_and_a_usage_report_on_a_chats_session_say_its_chats_figures():
    # setMode answered and pushed used 120 (workspace 117, history 0) and reportUsage, the
    # documented follow-up of ctx/prepare, pushed the same: the status bars jumped to the
    # workspace's tokens, which the chat's requests never carry
    async with a_prepared_chat() as (daemon, prepared, told):
        sid = prepared["sessionId"]
        moded = await result(daemon, "ctx/session/setMode", {"sessionId": sid, "mode": "short"})
        assert moded["used"] == prepared["tokens"] == told["used"], moded
        assert (await pushed(daemon, sid))["used"] == prepared["tokens"]
        daemon.notifications.clear()
        await result(daemon, "ctx/session/reportUsage", {
            "sessionId": sid, "promptTokens": prepared["tokens"] + 40,
            "estimatedTokens": prepared["tokens"]})
        after = await pushed(daemon, sid)
        assert after["used"] == prepared["tokens"] and after["byLayer"] == told["byLayer"]
        budget = await result(daemon, "ctx/session/budget", {"sessionId": sid})
        assert budget["used"] == after["used"]


async def test_configuring_a_chats_session_says_its_chats_figures():
    # configure answered and pushed used 926 (workspace 923, history 0) as the chat's
    async with a_prepared_chat() as (daemon, prepared, told):
        sid = prepared["sessionId"]
        daemon.notifications.clear()
        answered = await result(daemon, "ctx/session/configure",
                                {"sessionId": sid, "mode": "short"})
        assert answered["used"] == told["used"] and answered["byLayer"] == \
            told["byLayer"], answered
        assert (await pushed(daemon, sid))["used"] == told["used"]


@pytest.mark.parametrize(("change", "field"), [
    ({"model": "gpt-3.5-turbo"}, "model"), ({"budget": 100000, "model": "gpt-4o"}, "model"),
    ({"budget": 500000}, "budget"), ({"resetBudget": True}, "resetBudget")])
async def test_a_chats_model_or_budget_is_refused_naming_the_field(change, field):
    """A chat's model and budget are its client's, named by each request: configure on its
    session answered success with the chat's figures unchanged (gpt-4o, limit 2500 after
    {budget: 100000, model: gpt-4o}), and a later {budget: 500000} was refused against
    gpt-3.5-turbo, a model the chat never used. Refused now, naming the field, the chat's
    figures as they were."""
    async with a_prepared_chat() as (daemon, prepared, told):
        sid = prepared["sessionId"]
        out = await ask(daemon, "ctx/session/configure", {"sessionId": sid, **change})
        assert out.get("error", {}).get("code") == -32602, out
        assert out["error"]["data"]["field"] == field, out
        assert "live chat's session" in out["error"]["message"], out
        budget = await result(daemon, "ctx/session/budget", {"sessionId": sid})
        assert (budget["used"], budget["limit"], budget["model"]) == \
            (told["used"], told["limit"], told["model"])
