"""After a restart, or once memory forgot its conversation, every chat of a family finds its own
kept window, whatever order the chats come back in: a real State on a temporary state folder,
closed and opened again, the real tokenizer and SQLite. Before a restart the family's ids go
out in the order its chats first came; after it, in the order they come back, so a chat's
window must be found by its messages, and no chat may write its window over another's."""

from __future__ import annotations

import random

import pytest
from test_conversations import MODEL, SYSTEM, grow

from ctxlayer import protocol
from ctxlayer.core.prepare import persist
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import chats


def caller_of(st: State) -> Caller:
    return Caller(st, source="prepare", options=protocol.InitializationOptions(model=MODEL))


def chat(seed: int, opening: list[dict], turns: int) -> list[list[dict]]:
    """The requests of one chat, turn by turn."""
    r = random.Random(seed)
    messages, out = list(opening), []
    for t in range(turns):
        out.append(messages)
        messages = grow(messages, r, t)
    return out


def ask(st: State, messages: list[dict], session: str | None):
    return chats.prepare(caller_of(st), protocol.PrepareParams(
        format="ctxlayer", request={"messages": messages}, budget=3000,
        client_session_id=session))


def same_window(before: protocol.PrepareResult, after: protocol.PrepareResult) -> bool:
    """The request after the restart starts as the chat's last one did, up to its first
    summary chunk, and the provider's cached prefix is reused."""
    sent, now = before.request["messages"], after.request["messages"]
    k = next(k for k, m in enumerate(sent) if m["content"].startswith("[Summary of"))
    return now[:k + 1] == sent[:k + 1] and after.cache_reuse_tokens > 0


async def run(tmp_path, chats_: dict[str, list[list[dict]]], before: list[str],
              after: list[str], session: str | None) -> dict[str, bool]:
    """Each chat's requests up to its last turn but one, in the order ``before`` names them
    (a name once per turn, round robin until each chat is done); a restart; then each chat's
    last request in the order ``after`` names them. Whether each chat started again from its
    own window."""
    st = State(tmp_path / "state")
    last: dict[str, protocol.PrepareResult] = {}
    try:
        turn = dict.fromkeys(chats_, 0)
        while any(turn[n] < len(chats_[n]) - 1 for n in before):
            for n in before:
                if turn[n] < len(chats_[n]) - 1:
                    last[n] = await ask(st, chats_[n][turn[n]], session)
                    turn[n] += 1
        assert len({res.conversation_id for res in last.values()}) == len(chats_)
        await st.conversations.settled()
    finally:
        st.close()
    again = State(tmp_path / "state")
    try:
        now = {n: await ask(again, chats_[n][-1], session) for n in after}
        assert len({res.conversation_id for res in now.values()}) == len(chats_)
        await again.conversations.settled()
    finally:
        again.close()
    return {n: same_window(last[n], now[n]) for n in chats_ if last[n].compacted}


@pytest.mark.parametrize("after", [["worker", "lead", "other"], ["other", "worker", "lead"],
                                   ["lead", "other", "worker"]])
async def test_every_chat_of_a_client_session_finds_its_window_in_any_order(tmp_path, after):
    """A Claude Code run and two sub-agents' chats under its session id (they share no
    message): whichever comes back first takes the family's first id, and the chat that comes
    back last still finds its own window (before: the chat that came back second wrote its
    window over the third's, which then started afresh)."""
    def opening(text: str) -> list[dict]:
        return [{"role": "user", "id": "u0", "content": text}]

    chats_ = {"worker": chat(12, opening("Count the cache's entries."), 3),
              "other": chat(13, opening("List the cache's files."), 40),
              "lead": chat(11, opening("Where is the cache built?"), 40)}
    found = await run(tmp_path, chats_, ["worker", "other", "lead"], after, "run")
    assert found == {"other": True, "lead": True}


@pytest.mark.parametrize("after", [["a", "b"], ["b", "a"]])
async def test_two_chats_that_open_alike_each_find_their_window(tmp_path, after):
    """Two chats without any id that open alike (the same system prompt and first question,
    as two aider chats in one repository do) are one family, told apart by their messages.
    After a restart the second to come back is an edit of the first one's live conversation
    by its messages, yet it starts from its own kept window (before: afresh, and the first
    one had written its window over it)."""
    opening = [SYSTEM, {"role": "user", "id": "u0", "content": "Where is the cache built?"}]
    chats_ = {"a": chat(21, opening, 40), "b": chat(22, opening, 40)}
    found = await run(tmp_path, chats_, ["a", "b"], after, None)
    assert found == {"a": True, "b": True}


async def test_chats_kept_under_the_ids_of_before_the_model_was_in_them_are_found(
        tmp_path, monkeypatch):
    """A state folder an earlier version wrote, when a client session's family id did not name
    the model (before `ce5022b`): after the upgrade each chat of the session still starts from
    its own window (before: every one compacted afresh, once)."""
    from ctxlayer.core.text import content_hash
    from ctxlayer.state import identity

    def opening(text: str) -> list[dict]:
        return [{"role": "user", "id": "u0", "content": text}]

    chats_ = {"lead": chat(41, opening("Where is the cache built?"), 41),
              "worker": chat(42, opening("List the cache's files."), 41)}
    new_ids = identity.hinted_id
    monkeypatch.setattr(identity, "hinted_id",
                        lambda fmt, hint, model: "s" + content_hash(f"{fmt}\x00{hint}"))
    st = State(tmp_path / "state")
    try:
        last = {n: [await ask(st, turns[t], "run") for t in range(39)][-1]
                for n, turns in chats_.items()}
        await st.conversations.settled()
    finally:
        st.close()
    monkeypatch.setattr(identity, "hinted_id", new_ids)
    found = []
    for turn in (39, 40):  # and once more: a chat goes on under its window's id
        again = State(tmp_path / "state")
        try:
            now = {n: await ask(again, chats_[n][turn], "run") for n in ("worker", "lead")}
            await again.conversations.settled()
        finally:
            again.close()
        found.append({n: same_window(last[n], now[n]) for n in chats_})
        assert len({res.conversation_id for res in now.values()}) == 2
        last = now
    assert all(res.compacted for res in last.values())
    assert found == [{"lead": True, "worker": True}] * 2


async def test_a_named_conversation_keeps_its_name_after_a_restart_whatever_it_sends(tmp_path):
    """A conversation the client names (`conversationId`, the gateway's
    `x-ctxlayer-conversation`) goes on under that name after a restart, also when its request
    no longer agrees with the window kept (rewound to before its summaries): it starts afresh
    there, under its name."""
    turns = chat(31, [SYSTEM, {"role": "user", "id": "u0", "content": "Where is it built?"}], 40)

    def ask_named(st: State, messages: list[dict]):
        return chats.prepare(caller_of(st), protocol.PrepareParams(
            format="ctxlayer", request={"messages": messages}, budget=3000,
            conversation_id="mine"))

    st = State(tmp_path / "state")
    try:
        for messages in turns[:39]:
            res = await ask_named(st, messages)
        assert res.compacted
        await st.conversations.settled()
    finally:
        st.close()
    again = State(tmp_path / "state")
    try:
        rewound = await ask_named(again, turns[3])
        later = await ask_named(again, turns[39])
    finally:
        again.close()
    assert rewound.conversation_id == later.conversation_id == "mine"
    assert not rewound.compacted


async def replay(tmp_path, name: str, order: list[tuple[str, int]],
                 chats_: dict[str, list[list[dict]]], sessions: dict[str, str | None],
                 restart_at: int | None, max_live: int | None = None,
                 max_tokens: int | None = None) -> list[dict]:
    """The requests ``order`` names ((chat, turn) pairs) on a fresh state folder, a restart
    before the request at ``restart_at`` (None: none), at most ``max_live`` conversations in
    memory, of ``max_tokens`` together; the bodies sent, in order."""
    st = State(tmp_path / name)
    sent = []
    try:
        for k, (n, t) in enumerate(order):
            if k == restart_at:
                await st.conversations.settled()
                st.close()
                st = State(tmp_path / name)
            if max_live is not None:
                st.conversations.max_live = max_live
            if max_tokens is not None:
                st.conversations.max_tokens = max_tokens
            sent.append((await ask(st, chats_[n][t], sessions[n.rstrip("'")])).request)
            if max_tokens is not None:  # the turn's own conversation stays, whatever its size
                live = list(st.conversations._live.values())
                assert len(live) == 1 or sum(c.held() for c in live) <= max_tokens
        await st.conversations.settled()
    finally:
        st.close()
    return sent


def some_chats(seed: int, turns: int) -> tuple[dict[str, list[list[dict]]],
                                               dict[str, str | None]]:
    """Two chats that open alike, without any id (a, b); two under one client session id
    (c, d: they share no message); one alone (e); and two that start as others did (f: chat
    c forked at its 20th turn under a session id of its own; g: chat a's very requests under
    another session id): each chat's requests, and its session id."""
    alike = [SYSTEM, {"role": "user", "id": "u0", "content": "Where is the cache built?"}]

    def alone(text: str) -> list[dict]:
        return [{"role": "user", "id": "u0", "content": text}]

    chats_ = {"a": chat(100 + seed, alike, turns), "b": chat(200 + seed, alike, turns),
              "c": chat(300 + seed, alone("Count the cache's entries."), turns),
              "d": chat(400 + seed, alone("List the cache's files."), turns),
              "e": chat(500 + seed, alone("Why is the index slow?"), turns)}
    fork = random.Random(seed)
    chats_["f"] = [chats_["c"][20]]
    for t in range(turns - 1):
        chats_["f"].append(grow(chats_["f"][-1], fork, 900 + t))
    chats_["g"] = chats_["a"]
    for n in list(chats_):  # "a'": chat a's requests with their last answer regenerated
        chats_[n + "'"] = [regenerated(req) for req in chats_[n]]
    return chats_, {"a": None, "b": None, "c": "run", "d": "run", "e": None, "f": "fork",
                    "g": "copy"}


def regenerated(request: list[dict]) -> list[dict]:
    """The request with its last assistant message another answer (an edit of the chat)."""
    out = [dict(m) for m in request]
    k = max((i for i, m in enumerate(out) if m["role"] == "assistant"), default=None)
    if k is not None:
        out[k]["content"] = "Regenerated: " + out[k]["content"][::-1]
    return out


def interleaved(r: random.Random, lo: int, hi: int) -> list[tuple[str, int]]:
    """Turns ``lo`` to ``hi`` of each of the chats, in a random order (each chat's in its
    own), a turn now and then sent first with its last answer regenerated: the chat goes on
    from the answer it had (its next request extends the chain the edit left behind)."""
    names = "abcdefg"
    left = dict.fromkeys(names, lo)
    out = []
    while any(left[n] < hi for n in names):
        n = r.choice([n for n in names if left[n] < hi])
        if r.random() < 0.05:
            out.append((n + "'", left[n]))
        out.append((n, left[n]))
        left[n] += 1
    return out


@pytest.mark.parametrize("seed", range(1, 9))
async def test_after_a_restart_every_chat_sends_what_it_would_have_sent(tmp_path, seed):
    """The chats' turns interleaved at random (now and then a regenerated answer); a
    restart at a random point once every chat went past its budget, the chats' turns after it in another random order. Every
    request after the restart is the request the same requests would have got without it
    (ARCHITECTURE.md: a live chat's cached prefix never moves on a restart)."""
    r = random.Random(seed)
    turns = 44
    chats_, sessions = some_chats(seed, turns)
    cut = r.randint(28, 32)  # every chat is past its 3,000-token budget by then
    order = interleaved(r, 0, cut) + interleaved(r, cut, turns)
    at = next(k for k, (_, t) in enumerate(order) if t >= cut)
    restarted = await replay(tmp_path, "restarted", order, chats_, sessions, at)
    straight = await replay(tmp_path, "straight", order, chats_, sessions, None)
    last = {n: straight[k] for k, (n, _) in enumerate(order[:at]) if "'" not in n}
    assert all(any(m["content"].startswith("[Summary of") for m in body["messages"])
               for body in last.values())
    for k in range(at, len(order)):
        assert restarted[k] == straight[k], (k, order[k])


@pytest.mark.parametrize("seed", range(1, 9))
async def test_a_chat_forgotten_from_memory_sends_what_it_would_have_sent(tmp_path, seed):
    """The chats' turns interleaved at random (now and then a regenerated answer) with
    two conversations kept in memory
    (MAX_LIVE is 64: a Claude Code run's sub-agents reach it), so that each comes back from
    its kept window again and again: every request is the one it gets with all of them in
    memory (before: the two that open alike took turns under one id, each turn writing its
    window over the other's, and a chat whose window was gone started afresh)."""
    r = random.Random(seed)
    chats_, sessions = some_chats(seed, 40)
    order = interleaved(r, 0, 40)
    forgetful = await replay(tmp_path, "forgetful", order, chats_, sessions, None, 2)
    straight = await replay(tmp_path, "straight", order, chats_, sessions, None)
    for k in range(len(order)):
        assert forgetful[k] == straight[k], (k, order[k])


@pytest.mark.parametrize("seed", range(1, 5))
async def test_a_chat_forgotten_for_the_size_of_memory_sends_what_it_would_have_sent(
        tmp_path, seed):
    """As above, the conversations forgotten for the tokens of history memory holds
    (MAX_LIVE_TOKENS; here 12,000, about two of these chats past their budget): memory stays
    within it, but for the turn's own conversation, and every request is the one it gets with
    all of them in memory."""
    r = random.Random(seed)
    chats_, sessions = some_chats(seed, 40)
    order = interleaved(r, 0, 40)
    forgetful = await replay(tmp_path, "forgetful", order, chats_, sessions, None, None, 12_000)
    straight = await replay(tmp_path, "straight", order, chats_, sessions, None)
    for k in range(len(order)):
        assert forgetful[k] == straight[k], (k, order[k])


async def test_a_chat_that_never_stepped_is_kept_when_the_state_closes(tmp_path):
    """A chat under its budget never made a window to keep: when the state closes its
    window is written anyway, with its messages' counts, so that after a restart it starts
    from it rather than counting its history again."""
    turns = chat(41, [SYSTEM, {"role": "user", "id": "u0", "content": "Where is it built?"}], 6)
    st = State(tmp_path / "state")
    try:
        for messages in turns:
            res = await ask(st, messages, None)
        assert not res.compacted and not res.dropped and not res.truncated
        await st.conversations.settled()
        workspace = caller_of(st).workspace
    finally:
        st.close()
    again = State(tmp_path / "state")
    try:
        kept = again.sessions.store.conversation(workspace, res.conversation_id)
        assert kept is not None
        snap = persist.decode(kept[2])
        assert snap is not None and len(snap.tokens) == len(turns[-1]) == len(snap.hashes)
        later = await ask(again, grow(turns[-1], random.Random(1), 99), None)
        assert later.conversation_id == res.conversation_id
    finally:
        again.close()
