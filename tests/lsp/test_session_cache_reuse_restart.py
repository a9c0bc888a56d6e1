"""cacheReuseTokens of the first ctx/assemble after a restart compares with the last assembly
before it, and counts only the prefix that is still the same: the real daemon over stdio,
restarted on the same state folder. Before, the last assembly's fingerprint was kept in memory
only: a byte-identical assembly after a restart (clean or killed) said 0 tokens reused."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e
_worlds = itertools.count()
PRIMING = 3  # the reply priming every prompt counts: no message, nothing to reuse


async def first_assembly(env: dict, root: Path) -> dict:
    """A session assembled twice (the second reuses the first), the daemon then killed: no
    clean shutdown writes anything for it."""
    daemon = await RawDaemon.start(env=env)
    await daemon.initialize(root)
    await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 50000})
    await result(daemon, "ctx/session/append", {"sessionId": "s", "messages": [
        {"role": "user", "content": "explain src/app.py " * 100, "id": "u0"},
        {"role": "assistant", "content": "it prints hello " * 100, "id": "a0"}]})
    await result(daemon, "ctx/assemble", {"sessionId": "s"})
    last = await result(daemon, "ctx/assemble", {"sessionId": "s"})
    assert last["cacheReuseTokens"] == last["tokens"]["total"] - PRIMING
    daemon.proc.kill()
    await daemon.proc.wait()
    return last


async def restarted(env: dict, root: Path) -> RawDaemon:
    daemon = await RawDaemon.start(env=env)
    await daemon.initialize(root)
    await result(daemon, "ctx/session/open", {"sessionId": "s"})
    return daemon


@pytest.mark.parametrize("change", ["none", "append", "rule"])
async def test_the_reuse_after_a_restart_is_the_prefix_still_the_same(change):
    base = WORLD / f"reuse-restart-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    before = await first_assembly(env, root)
    daemon = await restarted(env, root)
    try:
        if change == "append":
            await result(daemon, "ctx/session/append", {"sessionId": "s", "messages": [
                {"role": "user", "content": "and src/other.py?", "id": "u1"}]})
        if change == "rule":
            await result(daemon, "ctx/session/addRule", {"sessionId": "s", "rule": {
                "text": "Never use tabs.", "weight": 5}})
        after = await result(daemon, "ctx/assemble", {"sessionId": "s"})
        if change == "none":
            assert after["messages"] == before["messages"]
            assert after["cacheReuseTokens"] == after["tokens"]["total"] - PRIMING
        if change == "append":  # the whole previous prompt, and not the new message
            assert after["messages"][:-1] == before["messages"]
            assert after["cacheReuseTokens"] == before["tokens"]["total"] - PRIMING
        if change == "rule":  # the rules come before the history: only what precedes them
            at = [m.get("id") for m in after["messages"]].index("ctx:rules")
            assert after["messages"][:at] == before["messages"][:at]
            t = after["tokens"]
            assert after["cacheReuseTokens"] == t["system"] + t["workspace"] - PRIMING > 0
    finally:
        assert await daemon.close() == 0
