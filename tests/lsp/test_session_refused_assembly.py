"""A refused ctx/assemble leaves its session as it was, over real stdio, a restart included.

Before (probe 68): an assembly refused with -32001 ("the system layers alone take 50215
tokens, over the budget of 5000") had kept its `systemPrompt` already, so every later
assembly without one was refused the same way, ctx/session/compact too, after a restart
as well, and ctx/session/budget counted the refused layers (50,215 system tokens). Now the
params are kept once an assembly succeeds with them (AssembleParams.systemPrompt says so).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ask, hermetic_env, make_repo, result, started

pytestmark = pytest.mark.e2e

SESSION = {"sessionId": "s", "format": "openai"}
#: a dynamic section far over the session's budget: the system layers alone are refused
HUGE = {"dynamic": {"history": "x " * 50000}}


async def test_a_refused_assembly_keeps_nothing_of_its_system_prompt(tmp_path: Path):
    env, root = hermetic_env(tmp_path / "world"), make_repo(tmp_path / "repo")
    daemon = await started(env, root)
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 5000})
        await result(daemon, "ctx/session/append", {"sessionId": "s", "messages": [
            {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "NEWEST q"}]})
        first = await result(daemon, "ctx/assemble", SESSION)
        budget = await result(daemon, "ctx/session/budget", {"sessionId": "s"})
        refused = await ask(daemon, "ctx/assemble", {**SESSION, "systemPrompt": HUGE})
        assert refused["error"]["code"] == -32001, refused
        again = await result(daemon, "ctx/assemble", SESSION)
        assert again["tokens"] == first["tokens"], again["tokens"]
        after = await result(daemon, "ctx/session/budget", {"sessionId": "s"})
        assert after["byLayer"] == budget["byLayer"], after["byLayer"]
        await result(daemon, "ctx/session/compact", {"sessionId": "s"})
    finally:
        assert await daemon.close() == 0
    daemon = await started(env, root)
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "s"})
        restarted = await result(daemon, "ctx/assemble", SESSION)
        assert restarted["tokens"]["system"] == first["tokens"]["system"], restarted["tokens"]
        # one that succeeds is kept for the assemblies after it, a restart's too
        layered = await result(daemon, "ctx/assemble",
                               {**SESSION, "systemPrompt": {"identity": "You are BIGBOT."}})
        assert layered["tokens"]["system"] > first["tokens"]["system"]
    finally:
        assert await daemon.close() == 0
    daemon = await started(env, root)
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "s"})
        kept = await result(daemon, "ctx/assemble", SESSION)
        assert kept["tokens"]["system"] == layered["tokens"]["system"]
        assert "BIGBOT" in kept["messages"][0]["content"]
    finally:
        assert await daemon.close() == 0
