"""ctx/session/budget says the context window the session's limit was derived from, as the
pushes of the same budget do: the window the editor named at initialize, else the model's
(the longest it opens when the limit is over the usual one).

Before: ctx/session/budget answered `window: null` for gpt-4o, whose window is known, and an
editor that named a 16,000-token window was pushed gpt-4o's 128,000 beside a limit of 8,000
fitted to its 16,000. The real daemon over stdio."""

from __future__ import annotations

import itertools

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result, started

from ctxlayer.tokenizers import LONG_WINDOW

pytestmark = pytest.mark.e2e
_worlds = itertools.count()


def pushed_windows(daemon: RawDaemon, session_id: str) -> set[int]:
    return {n["params"].get("window") for n in daemon.notifications
            if n.get("method") == "ctx/budgetChanged"
            and n["params"].get("sessionId") == session_id}


async def test_the_session_budget_says_the_window_its_limit_comes_from():
    base = WORLD / f"budget-window-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await started(env, root)
    try:
        opened = {"plain": {"model": "gpt-4o"},
                  "long": {"model": "claude-sonnet-4", "budget": 500_000},
                  "local": {"model": "my-local-llm", "budget": 200_000}}
        for sid, params in opened.items():
            await result(daemon, "ctx/session/open", {"sessionId": sid, **params})
        windows = {}
        for sid in opened:
            asked = await result(daemon, "ctx/session/budget", {"sessionId": sid})
            windows[sid] = asked.get("window")
        # an unknown model's window is a guess (128,000): the budget given says it is more
        assert windows == {"plain": 128_000, "long": LONG_WINDOW, "local": 200_000}, windows
    finally:
        assert await daemon.close() == 0

    daemon = await started(env, root, contextWindow=16_000)
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "plain"})
        asked = await result(daemon, "ctx/session/budget", {"sessionId": "plain"})
        assert (asked.get("window"), asked["limit"] < 16_000) == (16_000, True), asked
        appended = await result(daemon, "ctx/session/append", {
            "sessionId": "plain", "messages": [{"role": "user", "content": "hello there"}]})
        assert appended.get("window") == 16_000, appended
        await result(daemon, "ctx/assemble", {"sessionId": "plain"})
        assert pushed_windows(daemon, "plain") == {16_000}, pushed_windows(daemon, "plain")
    finally:
        assert await daemon.close() == 0
