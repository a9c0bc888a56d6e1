"""The newest question keeps its share of the room beside a summary written on an earlier
turn: a live chat, prepared turn by turn, keeps it at least half the room, as a fresh prepare
of the same history does. The summary shrinks or goes (audited) before the question goes under
half the room (what the system prompt leaves), and a cut question keeps whole words at both
ends."""

from __future__ import annotations

import random

from test_prepare import PRIMING, check_turn

from ctxlayer.core.compress.shorten import shorten
from ctxlayer.core.compress.tool_output import OMITTED
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import OPENAI_FORMAT, WordTokenizer, message_tokens
from ctxlayer.protocol import Message

COUNTER = WordTokenizer()
VOCAB = "parser token budget window cache prefix session editor stream answer".split()


def prose(r: random.Random, n: int) -> str:
    return " ".join(f"{r.choice(VOCAB)}{r.randint(0, 999)}" for _ in range(n))


def tiny_chat() -> list[Message]:
    """A short system prompt, a long first exchange, a short second, then a long question
    whose last words are what it asks."""
    r = random.Random(7)
    return [Message(role="system", id="s", content="Tiny chat. budget90 value476"),
            Message(role="user", id="1", content="Q1 " + prose(r, 600)),
            Message(role="assistant", id="2", content="A1 " + prose(r, 300)),
            Message(role="user", id="3", content="Q2 " + prose(r, 60)),
            Message(role="assistant", id="4", content="A2 " + prose(r, 50)),
            Message(role="user", id="5", content="Q3_NEWEST head " + prose(r, 280)
                    + " TAIL_OF_Q3")]


def turn_by_turn(msgs: list[Message], budget: int):
    """The chat prepared as a live one is: a request after each answer."""
    state = turn = None
    for k in range(2, len(msgs) + 1, 2):
        turn = prepare_turn(state, msgs[:k], budget, COUNTER)
        check_turn(turn, msgs[:k], budget)
        state = turn.state
    return turn


def tokens(m: Message) -> int:
    return message_tokens(m, COUNTER, OPENAI_FORMAT)


def question(turn) -> Message:
    return next(m for m in turn.messages if m.id == "5")


def test_a_summary_from_an_earlier_turn_gives_the_question_its_share():
    """Budget 138: turn by turn, the chunk written when Q2 came kept 95 tokens and Q3 went out
    at 32 (o200k at 150: 96 and 32, the tail cut mid-word), where a fresh prepare sent a
    24-token summary beside Q3 at 68 with its tail. Now the question keeps at least half the
    room, as much as a fresh prepare gives it, beside a summary."""
    msgs, budget = tiny_chat(), 138
    live = turn_by_turn(msgs, budget)
    fresh = prepare_turn(None, msgs, budget, COUNTER)
    room = budget - PRIMING - tokens(msgs[0])
    assert tokens(question(live)) >= room // 2
    assert tokens(question(live)) >= tokens(question(fresh))
    assert question(live).content.endswith(" TAIL_OF_Q3")
    assert any(m.kind == "summary" for m in live.messages)


def test_a_summary_cut_for_the_question_is_audited():
    """Budget 104: the chunk of the earlier turn (91 tokens) no merge makes smaller is cut to
    its head and tail beside the question at its share, and the audit says so (it was
    dropped, the question cut to 48 tokens, 45 of the budget unused)."""
    msgs, budget = tiny_chat(), 104
    live = turn_by_turn(msgs, budget)
    summary = next(m for m in live.messages if m.kind == "summary")
    told = [e for e in live.truncated if e.message_id == summary.id]
    assert len(told) == 1 and told[0].tokens_after == tokens(summary) < told[0].tokens_before
    assert tokens(question(live)) >= (budget - PRIMING - tokens(msgs[0])) // 2
    assert live.tokens >= budget - 8


def test_at_every_budget_the_live_question_keeps_half_the_room():
    """From 40 to 400 tokens: the question keeps at least half of what the system prompt
    leaves (all of itself when it fits), whatever a summary of an earlier turn took."""
    msgs = tiny_chat()
    whole = tokens(msgs[-1])
    for budget in range(40, 401):
        live = turn_by_turn(msgs, budget)
        room = budget - PRIMING - tokens(msgs[0])
        assert tokens(question(live)) >= min(whole, room // 2), budget


def test_a_question_on_one_line_is_cut_between_words_at_both_ends():
    """A one-line question cut to its head and tail: each end a whole word of it (cut by
    characters, the head ended in "parse" and the tail started at "IL_OF_Q3"), and the tail
    kept from 20 tokens on (40 characters held for the marker left none)."""
    text = tiny_chat()[-1].content
    said = set(text.split())
    for cap in range(16, 120):
        out = shorten(text, cap, COUNTER, keep_head=True)
        assert out is not None and COUNTER.count(out.text) <= cap
        kept = OMITTED.sub(" ", out.text).replace("…", " ").split()
        assert set(kept) <= said, (cap, out.text)
        if "omitted" in out.text and cap >= 20:
            assert out.text.endswith(" TAIL_OF_Q3"), (cap, out.text)
