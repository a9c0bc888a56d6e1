"""The old end of `limit`'s walk replayed (core/trim/tail.py): a warm re-trim takes the previous
walk's decisions and entries where the room ran out only when its own walk would make the same
ones, so it returns exactly what a cold trim returns; what would change them (another room, a
message pinned, a cost, a tool group reaching into that end) makes it walk."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_trim_properties import contents

from ctxlayer.core.errors import ContextError
from ctxlayer.core.memo import Memo
from ctxlayer.core.tokens import CountCache, WordTokenizer
from ctxlayer.core.trim import TrimCache, TrimOptions, tail, trim
from ctxlayer.protocol import Message, ToolCall

COUNTER = CountCache(WordTokenizer())


def _chat(n: int = 40) -> list[Message]:
    """Turns of a few words each, and a tool step every fifth: the room runs out well before
    the oldest at a budget of 120."""
    out: list[Message] = []
    for k in range(n):
        if k % 5 == 4:
            out += [Message(role="assistant", id=f"a{k}", content="calling",
                            tool_calls=[ToolCall(id=f"c{k}", name="sh", arguments=f'"ls {k}"')]),
                    Message(role="tool", id=f"t{k}", tool_call_id=f"c{k}",
                            content=" ".join(f"o{j}" for j in range(k % 7 + 3)))]
        else:
            out.append(Message(role="user" if k % 2 else "assistant", id=f"m{k}",
                               content=" ".join(f"w{j}" for j in range(k % 9 + 2))))
    return out


def _outcome(msgs, budget, **caches):
    try:
        r = trim(msgs, budget, COUNTER, **caches)
    except ContextError as e:
        return ("error", str(e))
    return (r.messages, r.tokens, r.dropped, r.truncated)


def test_a_re_trim_takes_the_old_end_of_the_walk_over():
    chat = _chat()
    cache = TrimCache()
    first = trim([*chat, Message(role="user", id="q", content="one two three")], 120, COUNTER,
                 cache=cache)
    assert cache.tails  # the room ran out: an old end was kept
    old_end = {id(e) for e in first.dropped}
    again = [*chat, Message(role="user", id="q", content="four five six")]  # the same cost
    warm = trim(again, 120, COUNTER, cache=cache)
    assert warm == trim(again, 120, COUNTER)
    assert sum(id(e) in old_end for e in warm.dropped) > len(warm.dropped) // 2


def test_what_would_change_the_old_end_makes_the_walk_go_through_it():
    chat = _chat()
    question = Message(role="user", id="q", content="one two three")
    cases = {
        "pinned": [*chat[:3], Message(**{**_fields(chat[3]), "pinned": True}), *chat[4:],
                   question],
        "cost": [*chat[:3], Message(**{**_fields(chat[3]), "content": "w " * 9}), *chat[4:],
                 question],
        "other words": [*chat[:3], Message(**{**_fields(chat[3]), "content": _words(5, "v")}),
                        *chat[4:], question],
        "late result": [*chat, Message(role="tool", id="late", tool_call_id="c4",
                                       content="more"), question],
        "other room": [*chat, Message(role="user", id="q", content="one two three four")],
        "other budget": [*chat, question],
    }
    for name, msgs in cases.items():
        cache = TrimCache()
        trim([*chat, question], 120, COUNTER, cache=cache)
        budget = 117 if name == "other budget" else 120
        assert _outcome(msgs, budget, cache=cache) == _outcome(msgs, budget), name


def _words(n: int, prefix: str = "w") -> str:
    return " ".join(f"{prefix}{j}" for j in range(n))


def test_an_old_end_changed_by_the_stages_before_the_fit_is_walked_again():
    """The next turn's answer makes the last one an earlier turn: its reasoning is stripped (it
    costs less), or the ephemeral message before it expires (it is dropped before the fit).
    With the same room where the walk reaches them, only their costs and liveness say that
    the old end is not the one walked before."""
    head = [Message(role="user" if k % 2 else "assistant", id=f"m{k}",
                    content=_words(k % 5 + 1)) for k in range(20)]
    for last in (Message(role="assistant", id="A", content=f"<think>{_words(40, 't')}</think> "
                         + _words(5, "a")),
                 Message(role="user", id="E", content=_words(5, "e"), ephemeral_ttl=1)):
        before = [*head, last, Message(role="user", id="U", content="u"),
                  Message(role="user", id="q1", content=_words(6, "q"))]
        after = [*before[:-1], Message(role="assistant", id="R", content="ok"),
                 Message(role="user", id="q2", content="and")]
        cache = TrimCache()
        trim(before, 20, COUNTER, cache=cache)
        assert cache.tails
        assert _outcome(after, 20, cache=cache) == _outcome(after, 20), last.id


def _fields(m: Message) -> dict:
    return {f: getattr(m, f) for f in m.__struct_fields__}


def test_replay_refuses_a_state_it_was_not_walked_with():
    chat = _chat()
    cache = TrimCache()
    trim([*chat, Message(role="user", id="q", content="x")], 120, COUNTER, cache=cache)
    (kept,) = cache.tails.values()
    q = kept.start
    tokens, group = list(kept.tokens), list(kept.group)
    alive = [True] * q  # as the walk found them: nothing dead, nothing fixed
    assert tail.replay(kept, q, kept.room + 1, tokens, group, set(), list(alive)) is None
    assert tail.replay(kept, q + 1, kept.room, tokens, group, set(), list(alive)) is None
    assert tail.replay(kept, q, kept.room, [*tokens[:-1], tokens[-1] + 1], group, set(),
                       list(alive)) is None
    assert tail.replay(kept, q, kept.room, tokens, group, {0}, list(alive)) is None
    assert tail.replay(kept, q, kept.room, tokens, [*group[:-1], 0], set(), list(alive)) is None
    assert tail.replay(kept, q, kept.room, tokens, group, set(), [False, *alive[1:]]) is None
    walked = list(alive)
    ours = tail.replay(kept, q, kept.room, tokens, group, set(), walked)
    assert ours and all(e.index < q for e in ours) and walked == kept.alive


@st.composite
def _turns(draw) -> tuple[list[list[Message]], int]:
    """A chat of many short turns and tool steps, then turns that append, regenerate the last
    message, pin an old one, change one's cost or answer an old call again."""
    chat: list[Message] = []
    for k in range(draw(st.integers(5, 40))):
        # mostly a few words; sometimes what the stages before the fit and reduce change (a
        # code block, reasoning, a copy), or a message that expires as assistant turns come
        words = draw(st.one_of(st.integers(0, 12).map(lambda n: " ".join(
            f"w{j}" for j in range(n))), contents())) if k % 3 else \
            " ".join(f"w{j}" for j in range(draw(st.integers(0, 12))))
        if draw(st.integers(0, 9)) == 0:
            chat.append(Message(role="user", id=f"e{k}", content=words,
                                ephemeral_ttl=draw(st.integers(0, 3))))
        elif draw(st.integers(0, 4)) == 0:
            chat += [Message(role="assistant", id=f"a{k}", content="calling",
                             tool_calls=[ToolCall(id=f"c{k}", name="sh", arguments=f"ls {k}")]),
                     Message(role="tool", id=f"t{k}", tool_call_id=f"c{k}", content=words)]
        else:
            chat.append(Message(role=draw(st.sampled_from(["user", "assistant"])), id=f"m{k}",
                                content=words, pinned=draw(st.integers(0, 19)) == 0))
    out = [chat]
    for t in range(draw(st.integers(1, 5))):
        how = draw(st.sampled_from(["append", "append", "another", "pin", "cost", "late"]))
        k = draw(st.integers(0, len(chat) - 1))
        words = " ".join(f"n{j}" for j in range(draw(st.integers(0, 12))))
        if how == "another":
            chat = [*chat[:-1], Message(role="user", id=f"q{t}", content=words)]
        elif how in ("pin", "cost") and chat[k].role != "tool" and not chat[k].tool_calls:
            change = {"pinned": True} if how == "pin" else {"content": words}
            chat = [*chat[:k], Message(**{**_fields(chat[k]), **change}), *chat[k + 1:]]
        elif how == "late" and any(m.tool_calls for m in chat):
            call = draw(st.sampled_from([m for m in chat if m.tool_calls])).tool_calls[0]
            chat = [*chat, Message(role="tool", id=f"late{t}", tool_call_id=call.id,
                                   content=words)]
        else:
            chat = [*chat, Message(role=draw(st.sampled_from(["user", "assistant"])),
                                   id=f"n{t}", content=words)]
        out.append(chat)
    return out, draw(st.integers(10, 200))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=_turns(), strategy=st.sampled_from(["pipeline", "priority"]))
def test_warm_trims_with_old_ends_replayed_equal_cold(turns, strategy):
    chats, budget = turns
    options = TrimOptions(strategy=strategy)
    memo, cache = Memo(), TrimCache()
    for chat in chats:
        assert _outcome(chat, budget, options=options, memo=memo, cache=cache) == \
            _outcome(chat, budget, options=options)


def test_old_ends_of_one_room_that_start_apart_are_both_kept():
    """Where the room ran out depends on the new message: with 14 words the walk's old end
    starts at message 36, with 4 at 32, both with no room left. Keyed by the room alone, the
    second put the first out, and the next turn with 14 words again walked 36 down to 32 (the
    1M bench: 200 or 97 by the turn, half its turns walked 100 drops more)."""
    chat = _chat()

    def asked(n: int, word: str) -> list[Message]:
        return [*chat, Message(role="user", id="q", content=_words(n, word))]

    cache = TrimCache()
    first = trim(asked(14, "a"), 100, COUNTER, cache=cache)
    trim(asked(4, "b"), 100, COUNTER, cache=cache)
    assert sorted((t.room, t.start) for t in cache.tails.values()) == [(0, 32), (0, 36)]
    again = asked(14, "c")  # the first turn's cost: its old end, from 36 down
    warm = trim(again, 100, COUNTER, cache=cache)
    assert warm == trim(again, 100, COUNTER)
    made = {id(e) for e in first.dropped if e.index < 36}
    ours = [e for e in warm.dropped if e.index < 36]
    assert ours and all(id(e) in made for e in ours)
