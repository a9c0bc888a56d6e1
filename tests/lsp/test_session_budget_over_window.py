"""A session whose budget is over the context window its client now names (the budget was set
under a bigger window; the editor now says `contextWindow` is smaller, or the session is
opened again under a smaller one) is assembled within that window, and the notice says the
budget was lowered and to what.

Before: reopened under a 16,000-token window, a session kept at 100,000 assembled 30,000
tokens at budget 100,000 with no notice (an open or configure asking for such a budget is
refused, and a one-off budget over the window is said). The real daemon over stdio,
started again on the same state folder with another window."""

from __future__ import annotations

import itertools

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result, started

pytestmark = pytest.mark.e2e
_worlds = itertools.count()


def turns(n: int) -> list[dict]:
    return [{"role": "user" if k % 2 == 0 else "assistant",
             "content": f"turn {k}: " + " ".join(f"w{k}x{j}" for j in range(1200))}
            for k in range(n)]


async def test_a_kept_budget_over_a_smaller_window_is_lowered_and_said():
    base = WORLD / f"over-window-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await started(env, root)
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 100_000})
        await result(daemon, "ctx/session/append", {"sessionId": "s", "messages": turns(24)})
        whole = await result(daemon, "ctx/assemble", {"sessionId": "s"})
        assert whole["budget"] == 100_000 and whole["tokens"]["total"] > 16_000
    finally:
        assert await daemon.close() == 0

    daemon = await started(env, root, contextWindow=16_000)
    try:
        opened = await result(daemon, "ctx/session/open", {"sessionId": "s"})
        assert opened["budget"] == 100_000  # reopened unchanged, as the protocol says
        out = await result(daemon, "ctx/assemble", {"sessionId": "s"})
        assert out["budget"] < 16_000 and out["tokens"]["total"] <= out["budget"], out["budget"]
        notice = out["notice"] or ""
        assert "100,000" in notice and "16,000" in notice, notice
        assert f"{out['budget']:,}" in notice, notice
        # a one-off budget within the window is taken as it is, nothing said of the window
        once = await result(daemon, "ctx/assemble", {"sessionId": "s", "budget": 9_000})
        assert once["budget"] == 9_000 and "16,000" not in (once["notice"] or "")
    finally:
        assert await daemon.close() == 0


def pushed_limits(daemon: RawDaemon) -> list[int]:
    return [n["params"]["limit"] for n in daemon.notifications
            if n.get("method") == "ctx/budgetChanged"
            and n["params"].get("sessionId") == "s"]


async def test_the_budget_says_the_limit_the_next_assembly_fits_to():
    """Before: under a 16,000-token window, ctx/session/budget (before and after the
    assembly) and the status pushed after an append said the kept 100,000 while the
    assembly fitted 8,000."""
    base = WORLD / f"over-window-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await started(env, root)
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 100_000})
        await result(daemon, "ctx/session/append", {"sessionId": "s", "messages": turns(24)})
    finally:
        assert await daemon.close() == 0

    daemon = await started(env, root, contextWindow=16_000)
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "s"})
        before = await result(daemon, "ctx/session/budget", {"sessionId": "s"})
        out = await result(daemon, "ctx/assemble", {"sessionId": "s"})
        fitted = out["budget"]
        assert fitted < 16_000 and before["limit"] == fitted, (before["limit"], fitted)
        after = await result(daemon, "ctx/session/budget", {"sessionId": "s"})
        assert (after["limit"], after["used"]) == (fitted, out["tokens"]["total"]), after
        appended = await result(daemon, "ctx/session/append",
                                {"sessionId": "s", "messages": turns(2)})
        assert appended["limit"] == fitted, appended
        await result(daemon, "ctx/session/addRule", {"sessionId": "s",
                                                     "rule": {"text": "Be brief."}})
        mode = await result(daemon, "ctx/session/configure", {"sessionId": "s",
                                                              "mode": "deep"})
        assert mode["limit"] == fitted, mode
        assert set(pushed_limits(daemon)) == {fitted}, pushed_limits(daemon)
    finally:
        assert await daemon.close() == 0

    daemon = await started(env, root)  # a window the kept budget fits takes it again
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "s"})
        again = await result(daemon, "ctx/session/budget", {"sessionId": "s"})
        assert again["limit"] == 100_000, again
    finally:
        assert await daemon.close() == 0
