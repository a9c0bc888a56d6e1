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


# --- the cache reuse said by the first request after a restart --------------------------------
# The window is written when a turn moves it; what a turn that did not move it sent is kept
# beside it (persist.Sent). Before, a restart compared the next request with the result of the
# last turn that stepped: 2,086 tokens of reuse said where the request repeated 2,761 of the one
# sent last (kill after turn 28 of `chat`), 0 in a chat that never stepped.

def chat(turns: int, edit: int | None = None) -> list[dict]:
    """An OpenAI chat of ``turns`` exchanges of about 130 tokens each, a question last (over
    a budget of 3,000 it steps at turns 23 and 30); message ``edit`` changed."""
    messages = [{"role": "system", "content": "Helpful."},
                {"role": "user", "content": "question 0"}]
    for i in range(turns):
        messages += [{"role": "assistant", "content": f"answer {i} " + f"word{i} " * 60},
                     {"role": "user", "content": f"question {i + 1}"}]
    if edit is not None:
        messages[edit] = {**messages[edit], "content": messages[edit]["content"] + " (edited)"}
    return messages


async def turn(daemon: RawDaemon, turns: int, edit: int | None = None) -> dict:
    return await result(daemon, "ctx/prepare", {
        "format": "openai", "budget": 3000,
        "request": {"model": "gpt-4o", "messages": chat(turns, edit)}})


def repeated(before: dict, after: dict) -> int:
    """The tokens of the leading messages of ``after``'s request identical to ``before``'s,
    counted as the engine counts a message: what the provider's cache can hold of it."""
    from ctxlayer.core.formats import decode
    from ctxlayer.core.prepare import DEFAULT_POLICY
    from ctxlayer.core.tokens import message_tokens
    from ctxlayer.tokenizers import counter_for

    sent, again = before["request"]["messages"], after["request"]["messages"]
    k = 0
    while k < min(len(sent), len(again)) and sent[k] == again[k]:
        k += 1
    counter = counter_for("gpt-4o")
    shared = decode("openai", {"model": "gpt-4o", "messages": again[:k]}, counter).messages
    return sum(message_tokens(m, counter, DEFAULT_POLICY.fmt) for m in shared)


async def restarted(env: dict, root) -> RawDaemon:
    daemon = await RawDaemon.start(env=env)
    await daemon.initialize(root)
    return daemon


async def kill(daemon: RawDaemon) -> None:
    os.kill(daemon.proc.pid, signal.SIGKILL)
    await daemon.proc.wait()


@pytest.mark.parametrize(("last", "edit"), [(28, None), (28, 50), (28, 44), (10, None),
                                            (10, 5)])
async def test_the_reuse_after_a_restart_is_said_against_the_request_sent_last(last, edit):
    """Killed after turns that did not step (28: five after the step of turn 23; 10: a chat
    that never stepped), once what they left to write is written: the next request, as it
    came or with an earlier message edited, sends what a daemon that never stopped sends, and
    says the reuse it says: the tokens its request repeats of the one sent last, never more
    (an edit of message 50, sent after the window was written, and of 44, shown whole)."""
    killed, env, root = await started("reuse")
    control, _, _ = await started("reuse-control")
    try:
        for t in range(last + 1):
            before, theirs = await turn(killed, t), await turn(control, t)
        assert not (before["truncated"] or before["dropped"])  # the last turn did not step
        await result(killed, "ctx/conversations", {})  # after the writes, on their thread
        await kill(killed)
        killed = await restarted(env, root)
        mine, theirs = await turn(killed, last + 1, edit), await turn(control, last + 1, edit)
        assert mine["request"] == theirs["request"]
        assert mine["cacheReuseTokens"] == theirs["cacheReuseTokens"] == repeated(before, mine)
    finally:
        assert await killed.close() == 0
        assert await control.close() == 0


@pytest.mark.parametrize("back", [False, True])
async def test_an_edit_before_the_kill_is_what_the_next_request_is_compared_with(back):
    """Turn 28 edits message 50 (sent after the window was written), and the daemon is
    killed at once. The next request goes on from the edit: its reuse is what it repeats of
    the edit's request (a restart that kept only how many messages were sent said all of
    them). Or it goes back to the chain before the edit, the chat the edit left (as a daemon
    that never stopped, it goes on there): what it repeats of that chat's last request."""
    killed, env, root = await started("edit-kill")
    control, _, _ = await started("edit-kill-control")
    try:
        for t in range(28):
            chain, _ = await turn(killed, t), await turn(control, t)
        edited, _ = await turn(killed, 28, 50), await turn(control, 28, 50)
        await kill(killed)  # the edit's turn waited for its write: nothing to wait for here
        killed = await restarted(env, root)
        edit = None if back else 50
        mine, theirs = await turn(killed, 29, edit), await turn(control, 29, edit)
        assert mine["request"] == theirs["request"]
        # the edit's chat, or the one it left (a fork: its id is the run's own)
        assert (mine["conversationId"] == edited["conversationId"]) \
            is (theirs["conversationId"] == edited["conversationId"]) is (not back)
        last = chain if back else edited
        assert mine["cacheReuseTokens"] == theirs["cacheReuseTokens"] == repeated(last, mine)
    finally:
        assert await killed.close() == 0
        assert await control.close() == 0


async def test_killed_before_a_turn_that_went_on_is_kept_it_says_no_more_than_it_reuses():
    """Killed as soon as turn 28 is answered (what it sent is written after the answer, the
    turn only went on from the one before): the next request is the same as a daemon that
    never stopped sends, and its reuse is that daemon's or the one of the turn before,
    never more than it repeats of the request sent last."""
    killed, env, root = await started("kill-early")
    control, _, _ = await started("kill-early-control")
    try:
        for t in range(28):
            await turn(killed, t), await turn(control, t)
        earlier = await turn(control, 27)
        before, _ = await turn(killed, 28), await turn(control, 28)
        await kill(killed)
        killed = await restarted(env, root)
        mine, theirs = await turn(killed, 29), await turn(control, 29)
        assert mine["request"] == theirs["request"]
        assert mine["cacheReuseTokens"] in (theirs["cacheReuseTokens"],
                                            repeated(earlier, mine))
        assert mine["cacheReuseTokens"] <= repeated(before, mine)
    finally:
        assert await killed.close() == 0
        assert await control.close() == 0
