"""ctx/session/reportUsage without `estimatedTokens` compares the provider's count with this
daemon's count of the session's last prompt; one it has not counted is an error naming
`estimatedTokens`, never a report dropped unsaid.

Before (p35): after a restart the same report (1.5x the assembly) answered bias 1.0 three
times over, the session's budget unchanged: the count it compares with was in memory only.
The real daemon over stdio, restarted on the same state folder."""

from __future__ import annotations

import itertools

import pytest
from conftest import WORLD, RawDaemon, ask, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e
_worlds = itertools.count()




async def test_a_report_after_a_restart_without_an_estimate_is_an_error_naming_it():
    base = WORLD / f"usage-restart-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    prompt = " ".join(f"w{k}" for k in range(800))
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 10000})
        await result(daemon, "ctx/session/append", {
            "sessionId": "s", "messages": [{"role": "user", "content": prompt}]})
        total = (await result(daemon, "ctx/assemble", {"sessionId": "s"}))["tokens"]["total"]
        billed = int(total * 1.5)
        out = await result(daemon, "ctx/session/reportUsage",
                           {"sessionId": "s", "promptTokens": billed})
        assert out["bias"] == pytest.approx(billed / total)  # against its own assembly
    finally:
        assert await daemon.close() == 0

    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/session/open", {"sessionId": "s"})
        limit = (await result(daemon, "ctx/session/budget", {"sessionId": "s"}))["limit"]
        out = await ask(daemon, "ctx/session/reportUsage",
                        {"sessionId": "s", "promptTokens": billed})
        assert out.get("error", {}).get("code") == -32602, out
        assert "estimatedTokens" in out["error"]["message"], out
        after = await result(daemon, "ctx/session/budget", {"sessionId": "s"})
        assert after["limit"] == limit  # nothing recorded
        # with the estimate it is taken; and once this daemon assembled, without it too
        out = await result(daemon, "ctx/session/reportUsage",
                           {"sessionId": "s", "promptTokens": billed, "estimatedTokens": total})
        assert out["bias"] == pytest.approx(billed / total)
        await result(daemon, "ctx/assemble", {"sessionId": "s"})
        out = await result(daemon, "ctx/session/reportUsage",
                           {"sessionId": "s", "promptTokens": billed})
        assert out["bias"] > 1.0
    finally:
        assert await daemon.close() == 0
