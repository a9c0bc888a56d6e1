"""A live chat killed (SIGKILL) as soon as a turn that stepped was answered, and started again
on the same state folder, sends that turn resent as a daemon that never stopped does: the
window the step made was written before the answer went out.

Before, that held only because the turn's audit was written after the window on the same
thread and waited for; without that wait and a write held back 0.3 s, the turn resent was made
again from an older window: another request, 13 tokens of its prefix reused (1043 from the
daemon that never stopped). The real daemon over stdio, twice: one killed and started again,
one that runs throughout."""

from __future__ import annotations

import itertools
import os
import signal

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e
_worlds = itertools.count()


def history(turns: int) -> list[dict]:
    """An OpenAI chat of ``turns`` exchanges of about 300 tokens each, a question last."""
    messages = [{"role": "system", "content": "Helpful."},
                {"role": "user", "content": "question 0"}]
    for i in range(turns):
        messages += [{"role": "assistant", "content": f"answer {i} " + f"word{i} " * 150},
                     {"role": "user", "content": f"question {i + 1}"}]
    return messages


async def prepared(daemon: RawDaemon, turns: int) -> dict:
    return await result(daemon, "ctx/prepare", {
        "format": "openai", "budget": 1500,
        "request": {"model": "gpt-4o", "messages": history(turns)}})


async def started(name: str):
    base = WORLD / f"kill-restart-{name}-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    await daemon.initialize(root)
    return daemon, env, root


@pytest.mark.parametrize("last", [5, 9])
async def test_a_turn_that_stepped_is_kept_before_its_answer(last):
    """Killed as soon as a turn that stepped was answered: the window it made was written
    before the answer went out, so the turn resent finds it (else the daemon made it again
    from an older window, and the provider's cached prefix held only as long as that
    reproduced it)."""
    await killed_and_compared(last, [last, last + 1], stepped=True, written=False)


async def killed_and_compared(last: int, after: list[int], stepped: bool,
                              written: bool) -> None:
    """Turns 0..``last`` on a daemon and on a control; the first killed (once what the turns
    left to write is written, when ``written``) and started again; then the turns ``after``
    on both, compared."""
    killed, env, root = await started("killed")
    control, _, _ = await started("control")
    try:
        for t in range(last + 1):
            mine, theirs = await prepared(killed, t), await prepared(control, t)
            assert mine["request"] == theirs["request"], t
        assert bool(theirs["truncated"] or theirs["dropped"]) == stepped
        if written:  # a read on the thread that writes the state, after those writes
            await result(killed, "ctx/conversations", {})
        os.kill(killed.proc.pid, signal.SIGKILL)
        await killed.proc.wait()

        killed = await RawDaemon.start(env=env)
        await killed.initialize(root)
        for t in after:
            mine, theirs = await prepared(killed, t), await prepared(control, t)
            assert mine["request"] == theirs["request"], t
            assert (t, mine["cacheReuseTokens"]) == (t, theirs["cacheReuseTokens"])
            assert mine["tokens"] == theirs["tokens"]
    finally:
        assert await killed.close() == 0
        assert await control.close() == 0
