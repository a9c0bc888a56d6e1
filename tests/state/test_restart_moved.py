"""A history a client's own compaction wrote (it opens with the summary, no session id names
it) goes on in the chat it compacted, an aider chat whose repo map was written anew in its
chat; after a restart its next request still does, from that chat's kept window: where it
went on is kept in the state folder. A real State on a temporary
state folder, closed and opened again, the real tokenizer and SQLite."""

from __future__ import annotations

import random

from test_conversations import MODEL, SYSTEM, grow
from test_restart_ids import same_window

from ctxlayer import protocol
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import chats


def ask(st: State, messages: list[dict]) -> protocol.PrepareResult:
    caller = Caller(st, source="prepare", options=protocol.InitializationOptions(model=MODEL))
    return chats.prepare(caller, protocol.PrepareParams(
        format="ctxlayer", request={"messages": messages}, budget=3000))


def turns(opening: list[dict], n: int, seed: int, start: int = 0) -> list[list[dict]]:
    r, out = random.Random(seed), [opening]
    for t in range(start, start + n):
        out.append(grow(out[-1], r, t))
    return out


async def restarted(tmp_path, first: list[list[dict]], then: list[list[dict]]) -> None:
    """``first``'s requests, then ``then``'s but its last; a restart; then its last. All in
    one chat, and the last starts from that chat's window."""
    st = State(tmp_path / "state")
    try:
        chat = [await ask(st, m) for m in first][-1].conversation_id
        went = [await ask(st, m) for m in then[:-1]]
        assert {r.conversation_id for r in went} == {chat}
        # its window summarized some of the history the client wrote
        assert any(m["content"].startswith("[Summary of") for m in went[-1].request["messages"])
        await st.conversations.settled()
    finally:
        st.close()
    again = State(tmp_path / "state")
    try:
        last = await ask(again, then[-1])
        await again.conversations.settled()
    finally:
        again.close()
    assert last.conversation_id == chat
    assert same_window(went[-1], last)


async def test_a_compacted_chat_goes_on_in_its_chat_after_a_restart(tmp_path):
    before = turns([SYSTEM, {"role": "user", "id": "u0", "content": "Check the build."}], 12, 1)
    # Continue's cn: the assistant's summary opens the history, then the turns after it
    summary = {"role": "assistant", "id": "s", "content": "We checked the build; it passed."}
    await restarted(tmp_path, before, turns(
        [SYSTEM, summary, {"role": "user", "id": "v", "content": "And now?"}], 30, 2))


async def test_a_chat_whose_opening_was_written_anew_goes_on_after_a_restart(tmp_path):
    """aider's: its repo map, first, changes as the chat's files do; each request carries the
    last one's question, answered."""
    def opening(files: str) -> list[dict]:
        return [SYSTEM, {"role": "user", "id": f"map-{files}", "content": f"Files: {files}"},
                {"role": "assistant", "id": f"ok-{files}", "content": "Ok."}]

    first = turns([*opening("a b"), {"role": "user", "id": "q", "content": "What?"}], 24, 3)
    rest = [*opening("a"), *first[-1][3:]]  # a file dropped: the map written anew
    # the last question answered, a new one
    await restarted(tmp_path, first, turns(rest, 4, 4, start=100)[1:])
