"""A chat that switches to a model counted alike (Claude Code's `/model` from one Claude to
another, gpt-4o to gpt-4o-mini) right after a restart goes on in its kept window, as it goes on
in its window in memory without the restart: the same id, the same calibration, the same
request, one chat listed.
A real State on a temporary state folder, closed and opened again."""

from __future__ import annotations

import random

from test_conversations import SYSTEM, grow
from test_restart_ids import caller_of

from ctxlayer import protocol
from ctxlayer.state import State
from ctxlayer.state.requests import chats


def ask(st: State, messages: list[dict], model: str):
    return chats.prepare(caller_of(st), protocol.PrepareParams(
        format="ctxlayer", request={"messages": messages}, budget=3000, model=model))


async def history(st: State, turns: list[list[dict]], model: str) -> None:
    """The chat's turns, each billed 10% over our count (the calibration a restart keeps)."""
    for messages in turns:
        res = await ask(st, messages, model)
        st.conversations.report_usage(res.conversation_id, {"prompt_tokens": res.tokens * 11
                                                            // 10})
    await st.conversations.settled()


async def test_a_chat_switching_to_a_model_counted_alike_after_a_restart_goes_on_in_its_window(
        tmp_path):
    r = random.Random(5)
    messages = [SYSTEM, {"role": "user", "id": "u0", "content": "Where is the cache built?"}]
    turns = []
    for t in range(30):
        turns.append(messages)
        messages = grow(messages, r, t)
    switched = turns[-1]
    results = {}
    for name, restart in (("restarted", True), ("never", False)):
        st = State(tmp_path / name)
        try:
            await history(st, turns[:-1], "gpt-4o")
            if restart:
                st.close()
                st = State(tmp_path / name)
            result = await ask(st, switched, "gpt-4o-mini")
            await st.conversations.settled()
            listed = await chats.conversations(caller_of(st), protocol.NoParams())
            results[name] = result, [c.conversation_id for c in listed.conversations]
        finally:
            st.close()
    (after, listed), (never, listed_never) = results["restarted"], results["never"]
    assert never.compacted  # the window a restart must find again summarized something
    assert after.conversation_id == never.conversation_id
    assert after.budget == never.budget < 3000  # calibrated: the provider bills more
    assert after.request == never.request
    assert listed == listed_never == [never.conversation_id]
