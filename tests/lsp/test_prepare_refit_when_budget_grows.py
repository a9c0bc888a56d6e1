"""ctx/prepare of a live chat whose budget grows is fitted again to the new budget, and says
what is still cut; a chat taking over that window (another conversationId, the same history
and a turn more) is told what its request is missing. The real daemon over stdio.

Before: one body (an ask, a tool call, a 117,860-token log) sent at budgets 600, 2,000 and
20,000 went out at 527 tokens each time (87%, 26%, 2% of the budget), the log cut to 1,602
characters, the answers at 2,000 and 20,000 saying `truncated: []` and `notice: null`; the
chat that took that window over was told the cut log but had no notice."""

from __future__ import annotations

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e

LOG = "\n".join(f"{i}: INFO processing item {i} ok value={i * 7}" for i in range(8000))
JOB = [{"role": "user", "content": "run the job"},
       {"role": "assistant", "content": None, "tool_calls": [
           {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}]},
       {"role": "tool", "tool_call_id": "c1", "content": LOG}]


async def prepared(daemon: RawDaemon, cid: str, budget: int, messages: list[dict]) -> dict:
    return await result(daemon, "ctx/prepare", {
        "format": "openai", "budget": budget, "conversationId": cid,
        "request": {"model": "gpt-4o", "messages": messages}})


def log_sent(out: dict) -> str:
    return next(m for m in out["request"]["messages"] if m["role"] == "tool")["content"]


async def test_a_chat_whose_budget_grows_gets_its_log_back_as_far_as_the_room_allows(own_daemon):
    first = await prepared(own_daemon, "A", 600, JOB)
    assert first["truncated"] and first["notice"]
    shown = len(log_sent(first))
    for budget in (2000, 20000):
        out = await prepared(own_daemon, "A", budget, JOB)
        assert out["tokens"] >= budget // 2, (budget, out["tokens"])
        assert shown < len(log_sent(out)) < len(LOG)
        shown = len(log_sent(out))
        # the log is still cut: the answer says so
        assert [e["action"] for e in out["truncated"]] == ["compressed"]
        assert out["notice"] and "shortened 1 message" in out["notice"], out["notice"]
    # a chat that takes over A's window with a turn more is told the log it will not see whole
    fork = await prepared(own_daemon, "B", 20000, [
        *JOB, {"role": "assistant", "content": "noted"}, {"role": "user", "content": "next"}])
    assert len(log_sent(fork)) == shown
    assert fork["truncated"] and fork["notice"] and "shortened" in fork["notice"], fork


async def test_a_chat_whose_budget_grows_across_a_restart_is_fitted_again():
    """After a restart the chat fitted into 600 tokens and asked at 20,000 sent 538 tokens on
    every turn, the log cut to 1,602 characters, its answers saying `truncated: []`."""
    base = WORLD / "refit-across-restart"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        first = await prepared(daemon, "R", 600, JOB)
    finally:
        assert await daemon.close() == 0
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        grown = await prepared(daemon, "R", 20000, JOB)
        later = await prepared(daemon, "R", 20000, [
            *JOB, {"role": "assistant", "content": "noted"}, {"role": "user", "content": "next"}])
    finally:
        assert await daemon.close() == 0
    assert len(log_sent(grown)) > len(log_sent(first)) and grown["tokens"] >= 10000, grown["tokens"]
    assert [e["action"] for e in grown["truncated"]] == ["compressed"] and grown["notice"]
    assert len(log_sent(later)) == len(log_sent(grown))  # the grown window holds


def tool_loop(turns: int) -> dict:
    """An Anthropic agent loop (the stateful probe's): a task, then turns of two bash calls
    each with their outputs."""
    w = "alpha beta gamma delta file.py error run tests fix build".split()

    def words(n: int, s: int) -> str:
        return " ".join(w[(i * 7 + s) % len(w)] for i in range(n))

    messages: list[dict] = [{"role": "user", "content": "task: " + words(50, 0)}]
    for i in range(turns):
        ids = [f"toolu_{i}_{j}" for j in range(2)]
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": "doing " + words(40, i)},
            *({"type": "tool_use", "id": t, "name": "bash", "input": {"cmd": "ls " + t}}
              for t in ids)]})
        results: list[dict] = [{"type": "tool_result", "tool_use_id": t,
                                "content": "out " + words(80, i + j)} for j, t in enumerate(ids)]
        if i == turns - 1:
            results.append({"type": "text", "text": "continue " + words(20, i)})
        messages.append({"role": "user", "content": results})
    return {"model": "claude-opus-4-1", "max_tokens": 2048, "system": "sys prompt here",
            "messages": messages}


async def test_a_request_sent_again_after_a_restart_at_the_same_budget_gets_the_same_body():
    """The window taken up after a restart was read as fitted to a budget of 0, so a result
    under half of its budget (391 of 800 after a summary step) was made again at the same
    budget: the retry of a failed upstream call after a restart went out as 611 tokens,
    13 messages summarized anew, 8 tokens of the 391 cached reused. At 900: with the task
    kept whole in its summary (stop 68) the result at 800 was 440, no longer the case."""
    base = WORLD / "same-budget-across-restart"
    env, root = hermetic_env(base), make_repo(base / "repo")

    async def ask(daemon: RawDaemon, turns: int) -> dict:
        return await result(daemon, "ctx/prepare", {
            "format": "anthropic", "request": tool_loop(turns), "budget": 900,
            "conversationId": "c1"})

    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await ask(daemon, 4)
        before = await ask(daemon, 5)
    finally:
        assert await daemon.close() == 0
    assert before["tokens"] < 450 and before["notice"], before["tokens"]  # the case at hand
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        again = await ask(daemon, 5)
    finally:
        assert await daemon.close() == 0
    assert again["request"] == before["request"]
    assert again["tokens"] == before["tokens"] and again["notice"] == before["notice"]
    # all of it the cached prefix, and never more than the request (394 of 391 were said)
    assert before["tokens"] - 10 <= again["cacheReuseTokens"] <= again["tokens"], again
