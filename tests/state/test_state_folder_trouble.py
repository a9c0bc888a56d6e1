"""A state folder that cannot be written or read (a full disk, a lock held past its timeout)
does not stop a live chat: each request is fitted as it would be, and the result's warning says
what was not kept. Before, every turn that summarized or cut something answered with an error.
A real State on a temporary state folder, the store's reads and writes made to fail as SQLite
fails on a full disk."""

from __future__ import annotations

import random
import sqlite3

import pytest
from test_conversations import SYSTEM
from test_restart_ids import ask, chat

from ctxlayer.state import State

FAILING = ("create_or_get", "add_audit", "put_conversation", "conversation",
           "family_conversations")


def full(*_args, **_kwargs):
    raise sqlite3.OperationalError("database or disk is full")


def fail_store(st: State, mp: pytest.MonkeyPatch, also: tuple[str, ...] = ()) -> None:
    store = st.sessions.store
    for name in (*FAILING, *also):
        mp.setattr(store, name, full)


@pytest.mark.parametrize("fails_from", [0, 12])  # from the first request / once it stepped
async def test_a_chat_goes_on_with_the_state_folder_failing_and_is_told(tmp_path, fails_from):
    turns = chat(random.randrange(1000), [SYSTEM, {"role": "user", "id": "u0",
                                                  "content": "Where is the cache built?"}], 40)
    sent, straight, published = [], [], []
    with pytest.MonkeyPatch.context() as mp:
        st = State(tmp_path / "failing")
        st.events.budget_listeners.append(lambda ws, b, who: published.append(b))
        try:
            for k, messages in enumerate(turns):
                if k == fails_from:
                    fail_store(st, mp)
                sent.append(await ask(st, messages, "run"))
        finally:
            mp.undo()
            st.close()
    st = State(tmp_path / "straight")
    try:
        straight = [await ask(st, messages, "run") for messages in turns]
    finally:
        st.close()
    assert [r.request for r in sent] == [r.request for r in straight]
    assert any(r.compacted for r in sent[fails_from:])
    for r in sent[fails_from:]:  # a turn that cut something writes its audit
        if r.dropped or r.truncated:
            assert r.warning is not None and "the disk is full" in r.warning, r.warning
    if fails_from == 0:  # its session could not be opened
        assert all("open this chat's session" in (r.warning or "") for r in sent)
    assert all(r.warning is None for r in sent[:fails_from])
    # the editors hear it with the chat's budget (a gateway chat's client does not show it)
    told = [b.warning for b in published if b.conversation_id]
    assert [w for w in told if w] == [r.warning for r in sent if r.warning]


async def test_a_chat_no_session_id_names_goes_on_with_the_state_folder_failing(tmp_path):
    """With no session id, a new chat's first request reads where a chat that opens like it
    went on (`moved`), and a chat whose opening was written anew keeps where it went on
    (`put_moved`): both failing, each request is fitted as it would be, and the first says
    what was not read."""
    first = chat(7, [SYSTEM, {"role": "user", "id": "u0", "content": "Why is it slow?"}], 12)
    anew = [{**SYSTEM}, {"role": "assistant", "id": "s0", "content": "We profiled it."},
            *first[-1][1:]]  # the client's compaction: its summary opens the history
    with pytest.MonkeyPatch.context() as mp:
        st = State(tmp_path / "failing")
        try:
            fail_store(st, mp, also=("moved", "put_moved"))
            sent = [await ask(st, m, None) for m in [*first, anew]]
        finally:
            mp.undo()
            st.close()
    st = State(tmp_path / "straight")
    try:
        straight = [await ask(st, m, None) for m in [*first, anew]]
    finally:
        st.close()
    assert [r.request for r in sent] == [r.request for r in straight]
    assert len({r.conversation_id for r in sent}) == 1  # the compacted history went on in it
    assert "read where the chat went on" in (sent[0].warning or "")
