"""A rewind (the user regenerates an earlier answer: the request is a prefix of the previous
one) moves which message asks the question and which turn is under way. The codecs cost a
message by where it stands: the question's documents are parts of it, an earlier message's are
pieces of their own; the turn under way's thinking or reasoning is read again, an earlier
turn's not. A decode that takes the previous turn's messages over must cost them as a decode
from nothing does, whichever way the question moved (before, only a question moving later was
read again: after a rewind the document question was two pieces at 9 + 19 tokens instead of
one message at 24, and ctx/prepare said 60 tokens of a body ctx/count read as 56)."""

from __future__ import annotations

import itertools

import pytest

from ctxlayer.core.formats import decode, encode, request_tokens, written
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import WordTokenizer

WORDS = WordTokenizer()
DOC = {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                      "data": "the build fails in file.py line 3: NameError"}}
SEALED = {"type": "thinking", "thinking": "short summary here", "signature": "A" * 1600}
CACHED_SYSTEM = [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]


def document_chat() -> dict:
    return {"model": "claude-opus-4-1", "max_tokens": 100, "system": CACHED_SYSTEM,
            "messages": [
                {"role": "user", "content": "hello, a question about the build"},
                {"role": "assistant", "content": "sure, send the log"},
                {"role": "user", "content": [{"type": "text", "text": "here is the log"}, DOC]},
                {"role": "assistant", "content": "the NameError comes from file.py"},
                {"role": "user", "content": "thanks, and how do I fix it?"}]}


def thinking_chat() -> dict:
    """Sonnet 4.5 reads only the turn under way's thinking."""
    answer = {"role": "assistant", "content": [SEALED, {"type": "text", "text": "done"}]}
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [
        {"role": "user", "content": "go"}, answer, {"role": "user", "content": "and now?"},
        answer, {"role": "user", "content": "once more"}]}


def reasoning_chat() -> dict:
    """DeepSeek ignores the reasoning of a turn without tool calls once the user writes again."""
    answer = {"role": "assistant", "content": "done", "reasoning_content": "weigh " * 50}
    return {"model": "deepseek-v4-pro", "messages": [
        {"role": "user", "content": "go"}, answer, {"role": "user", "content": "and now?"},
        answer, {"role": "user", "content": "once more"}]}


CHATS = [("anthropic", document_chat), ("anthropic", thinking_chat),
         ("openai", reasoning_chat)]


@pytest.mark.parametrize(("fmt", "chat"), CHATS, ids=["document", "thinking", "reasoning"])
def test_a_decode_after_any_earlier_request_costs_as_a_fresh_one(fmt, chat):
    """Every request of the chat decoded after every other one (a rewind, a turn added, the
    same again): the messages taken over cost what a decode from nothing gives them."""
    payload = chat()
    msgs = payload["messages"]
    for before, now in itertools.product(range(1, len(msgs) + 1), repeat=2):
        previous = decode(fmt, {**payload, "messages": msgs[:before]}, WORDS)
        later = {**payload, "messages": msgs[:now]}
        warm = decode(fmt, later, WORDS, previous=previous)
        cold = decode(fmt, later, WORDS)
        assert warm.messages == cold.messages, (before, now)
        assert request_tokens(warm) == request_tokens(cold), (before, now)


def test_a_rewound_turns_tokens_are_what_its_body_costs():
    """The probe's case at the core: the whole chat, then its first three messages (the
    answer to the document question regenerated); the turn's total is the count of what it
    sends, as on a first turn."""
    payload = document_chat()
    first = decode("anthropic", payload, WORDS)
    turn = prepare_turn(None, first.messages, 2000, WORDS)
    again = decode("anthropic", {**payload, "messages": payload["messages"][:3]}, WORDS,
                   previous=first)
    rewound = prepare_turn(turn.state, again.messages, 2000, WORDS)
    sent = written(again, encode(again, rewound.messages,
                                 cache_breakpoints=rewound.breakpoints))[1]
    fresh = decode("anthropic", {**payload, "messages": payload["messages"][:3]}, WORDS)
    assert rewound.tokens == sent == prepare_turn(None, fresh.messages, 2000, WORDS).tokens
