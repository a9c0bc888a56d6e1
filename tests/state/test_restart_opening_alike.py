"""After a restart, a new chat that opens as kept chats did (the same system prompt and first
exchange) takes one of their windows up as an edit, as it edits a live chat in memory: the
window it edits is kept under a fork's id, and the chat it was goes on from it. Each request
gets what it gets with nothing restarted (the ids go out anew: they may differ). A real State
on a temporary state folder, closed and opened again."""

from __future__ import annotations

import random

from test_conversations import SYSTEM, grow
from test_restart_ids import caller_of

from ctxlayer import protocol
from ctxlayer.state import State
from ctxlayer.state.requests import chats

OPENING = [SYSTEM, {"role": "user", "id": "o-u", "content": "Read AGENTS.md, then wait."},
           {"role": "assistant", "id": "o-a", "content": "Ready."}]


def turns(seed: int, n: int) -> list[list[dict]]:
    """A chat's requests after the opening, turn by turn (each ends with a question)."""
    r = random.Random(seed)
    messages = [*OPENING, {"role": "user", "id": "u0", "content": f"Question 0 of {seed}?"}]
    out = [messages]
    for t in range(n - 1):
        messages = grow(messages, r, t)
        out.append(messages)
    return out


async def run(path, requests: list[tuple[str, list[dict]]], restart_at: int | None
              ) -> tuple[dict[str, list], int]:
    """Each chat's results in order (a restart before request ``restart_at``), and how many
    chats `ctx/conversations` lists at the end."""
    st, got = State(path), {}
    try:
        for n, (name, messages) in enumerate(requests):
            if n == restart_at:
                await st.conversations.settled()
                st.close()
                st = State(path)
            got.setdefault(name, []).append(await chats.prepare(
                caller_of(st), protocol.PrepareParams(format="ctxlayer", budget=1500,
                                                      request={"messages": messages})))
        await st.conversations.settled()
        listed = await chats.conversations(caller_of(st), protocol.NoParams())
    finally:
        st.close()
    return got, len(listed.conversations)


async def test_a_new_chat_opening_as_kept_ones_did_leaves_their_windows_to_them(tmp_path):
    """X, then Y (same opening: an edit of X, which goes on under a fork's id), X once more;
    a restart; S opens alike with a short answer of its own; then Y and X go on. Before, S
    took Y's window under the family's id and wrote its own over it: Y went on from X's
    window, under X's id (its request made anew), and X from Y's."""
    x, y = turns(1, 16), turns(2, 16)
    s = [*OPENING[:2], {"role": "assistant", "id": "s0", "content": "Hello again."},
         {"role": "user", "id": "s1", "content": "A short new question."}]
    requests = [*(("x", m) for m in x[:12]), *(("y", m) for m in y[:12]), ("x", x[12]),
                ("s", s), ("y", y[12]), ("y", y[13]), ("x", x[13]), ("x", x[14])]
    after, listed = await run(tmp_path / "restarted", requests, restart_at=25)
    never, listed_never = await run(tmp_path / "never", requests, restart_at=None)
    assert never["x"][-1].compacted and never["y"][-1].compacted
    for name in ("s", "y", "x"):
        assert [r.request for r in after[name]] == [r.request for r in never[name]], name
        assert [r.cache_reuse_tokens for r in after[name]] == \
            [r.cache_reuse_tokens for r in never[name]], name
    assert len({r.conversation_id for name in after for r in after[name][-1:]}) == 3
    assert listed == listed_never == 3


async def test_a_fork_after_a_restart_leaves_the_chat_it_forks_its_window(tmp_path):
    """X; a restart; F forks X (its messages but the last two, then a long question of its
    own); X goes on. Before, F took X's window under X's id and wrote its own over it, and
    X went on from F's (fuzz seed 53: its long tool results sent outlined, 2,367 tokens where
    the daemon never restarted sent them whole, 14,506)."""
    x = turns(3, 14)
    fork = [*x[9][:-2], {"role": "user", "id": "f1", "content": "Instead: " + " ".join(
        f"line {n} of the trace" for n in range(300))}]
    requests = [*(("x", m) for m in x[:10]), ("f", fork), ("x", x[10]), ("x", x[11])]
    after, listed = await run(tmp_path / "restarted", requests, restart_at=10)
    never, listed_never = await run(tmp_path / "never", requests, restart_at=None)
    for name in ("f", "x"):
        assert [r.request for r in after[name]] == [r.request for r in never[name]], name
    assert listed == listed_never == 2
