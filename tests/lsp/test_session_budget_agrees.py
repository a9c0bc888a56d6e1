"""A session's Budget adds up, and ctx/session/budget says what the last assembly said.

Before (p23): the ctx/budgetChanged of an assembly whose newest message was shortened carried
the assembly's used (1855) over a measure's layers (history 10118: the message whole), and
ctx/session/budget right after answered that measure, 10238 used of 2000, 511.9%, beside
an assembly that sent 1855. Now an assembly's Budget is what it sent, layer by layer, and
the session's budget is that one until the session changes.

Property-style: seeded random walks of a session's requests against the real daemon over
stdio; after every request each pushed Budget of the session adds up, and after every
assembly at the session's own budget ctx/session/budget agrees with what it pushed."""

from __future__ import annotations

import asyncio
import itertools
import random

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e
_worlds = itertools.count()
FIGURES = ("used", "limit", "percent", "byLayer")



def pushed(daemon: RawDaemon, since: int) -> list[dict]:
    return [n["params"] for n in daemon.notifications[since:]
            if n["method"] == "ctx/budgetChanged" and n["params"].get("sessionId") == "s"]


async def assembled_push(daemon: RawDaemon, since: int) -> dict:
    """The Budget the assembly pushed (sent on the loop beside its answer)."""
    for _ in range(200):
        mine = [b for b in pushed(daemon, since) if b.get("source") == "session"]
        if mine:
            return mine[-1]
        await asyncio.sleep(0.01)
    raise AssertionError("the assembly pushed no budget")


def log_message(rng: random.Random) -> str:
    lines = rng.randint(50, 700)
    return "Here is my log, what is wrong?\n" + "\n".join(
        f"2026-12-06 INFO worker {i} processed batch {i * 7} ok" for i in range(lines)
    ) + f"\nERROR: disk full on /var/lib/data{lines}"


def step(rng: random.Random, k: int) -> tuple[str, dict]:
    """One request of a session's life, chosen at random."""
    kind = rng.choice(["chat", "chat", "log", "rule", "item", "mode", "usage", "compact"])
    if kind == "chat":
        return "ctx/session/append", {"messages": [
            {"role": "user", "content": f"question {k}: " + "why " * rng.randint(1, 300)},
            {"role": "assistant", "content": f"answer {k}: " + "because " * rng.randint(1, 300)}]}
    if kind == "log":
        return "ctx/session/append", {"messages": [{"role": "user",
                                                    "content": log_message(rng)}]}
    if kind == "rule":
        return "ctx/session/addRule", {"rule": {"text": f"Always check case {k}.",
                                                "weight": rng.randint(1, 5)}}
    if kind == "item":
        return "ctx/session/addItem", {"item": {"kind": rng.choice(["note", "log"]),
                                                "content": f"fact {k} " * rng.randint(1, 80)}}
    if kind == "mode":
        return "ctx/session/setMode", {"mode": rng.choice(["short", "deep", "debug"])}
    if kind == "usage":
        return "ctx/session/reportUsage", {"promptTokens": rng.randint(900, 1500),
                                           "estimatedTokens": 1000}
    return "ctx/session/compact", {"keepRecent": rng.randint(0, 3)}


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_after_any_request_budgets_add_up_and_the_session_budget_agrees(seed):
    rng = random.Random(seed)
    base = WORLD / f"budget-agrees-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 3000})
        await result(daemon, "ctx/session/append", {"sessionId": "s", "messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})
        for k in range(14):
            since = len(daemon.notifications)
            method, params = step(rng, k)
            await result(daemon, method, {"sessionId": "s", **params})
            if rng.random() < 0.7:  # not after every change: a change alone must add up too
                one_off = rng.random() < 0.2
                ask = {"sessionId": "s", **({"budget": 2500} if one_off else {})}
                since = len(daemon.notifications)
                out = await result(daemon, "ctx/assemble", ask)
                sent = await assembled_push(daemon, since)
                assert sent["used"] == out["tokens"]["total"], (sent, out["tokens"])
                assert sent["byLayer"] == {n: out["tokens"][n] for n in sent["byLayer"]}
                now = await result(daemon, "ctx/session/budget", {"sessionId": "s"})
                assert now["used"] == sum(now["byLayer"].values()), now
                if not one_off:
                    assert {f: now[f] for f in FIGURES} == {f: sent[f] for f in FIGURES}
            for budget in pushed(daemon, since):
                assert budget["used"] == sum(budget["byLayer"].values()), (method, budget)
    finally:
        assert await daemon.close() == 0
