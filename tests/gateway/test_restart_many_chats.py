"""More chats of one family than a restart reads the kept windows of (`FAMILY_MOST`, 8): ten
chats of one client (one OpenAI `user`, one system prompt, each its own questions), each
compacted, then the gateway restarts and they come back. No chat is given an id whose kept
window is another chat's, no window is written over by another chat's, and every chat is
listed. Before: a chat whose own window was not among those read took up another chat's
window that agreed with it on the system prompt alone, and its id (`back C9 s...`): that
chat's window was lost, and two chats went on under one id. Real gateway, the strict
stand-in, a real state folder kept across the restart."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from gateway_stack import Stack, prose, small_stack

CHATS = 10
TURNS = 8
SYSTEM = {"role": "system", "content": "You are a helpful assistant (many chats)."}


def ask(stack: Stack, messages: list[dict]) -> tuple[str, list[dict]]:
    """The conversation the gateway put the request in, and what went upstream."""
    raw = stack.openai().chat.completions.with_raw_response.create(
        model="standin-small", max_tokens=128, messages=[SYSTEM, *messages],
        extra_body={"user": "alice"})
    raw.parse()
    return raw.headers["x-ctxlayer-conversation"], stack.model_requests()[-1]["body"]["messages"]


def listed(stack: Stack) -> set[str]:
    return {c.conversation_id for c in stack.state.conversations.list(
        stack.gateway.caller.workspace)}


@pytest.mark.parametrize("order", ["newest first", "oldest first"])
def test_ten_chats_of_one_family_come_back_each_in_its_own(
        tmp_path: Path, order: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ctxlayer.state.conversations")
    names = [f"C{i}" for i in range(CHATS)]
    chats: dict[str, list[dict]] = {n: [] for n in names}
    before: dict[str, str] = {}
    with small_stack(tmp_path) as stack:
        for n in names:
            for k in range(TURNS):
                chats[n].append({"role": "user", "content": prose(f"{n} asks {k}", 140)})
                before[n], _ = ask(stack, chats[n])
                chats[n].append({"role": "assistant", "content": prose(f"{n} says {k}", 140)})
        assert len(set(before.values())) == CHATS
    after: dict[str, str] = {}
    with small_stack(tmp_path) as stack:
        for n in (names[::-1] if order == "newest first" else names):
            chats[n].append({"role": "user", "content": f"{n} comes back"})
            after[n], sent = ask(stack, chats[n])
            # its own text only: no other chat's window was taken up
            others = [o for o in names if o != n and f"{o} asks" in str(sent)]
            assert not others, (n, others)
        # each under its own id of before, or a new one: never another chat's
        for n in names:
            assert after[n] not in {before[o] for o in names if o != n}, (n, after, before)
        assert len(set(after.values())) == CHATS, after
        assert set(after.values()) <= listed(stack)
        # each chat whose window is among the family's 8 most recent not in memory goes on
        # in it, under its id. Oldest first, C0's is read under the family's id and C1's is
        # the ninth of the rest: C1 starts afresh under a new id, and the log says why; its
        # old window is still listed, until it expires
        afresh = [n for n in names if after[n] != before[n]]
        assert afresh == ([] if order == "newest first" else ["C1"]), (after, before)
        said = [r.getMessage() for r in caplog.records if "starts afresh" in r.getMessage()]
        assert [after[n] in " ".join(said) for n in afresh] == [True] * len(afresh), said
        kept, _, _ = stack.thread.call(stack.state.conversations.listed(
            stack.gateway.caller.workspace))
        assert {before[n] for n in afresh} <= {c.conversation_id for c in kept}
