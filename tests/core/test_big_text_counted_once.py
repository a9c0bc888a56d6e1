"""A huge text with no space in it (a base64 blob, minified JSON, ``"a" * 3_000_000``) is one
pre-token to tiktoken, whose count of it takes seconds: a conversation's first prepare counts
it once, and its outline counts only cap-sized cuts of it, one each time it is outlined.

The tokenizer is a fake that counts a run of letters as o200k counts a run of one letter (8 to
a token), behind the process's `CountCache`; it records every count of a long text, which is
what costs (the cache already answers the very same text again)."""

from __future__ import annotations

import json
import math

import pytest

from ctxlayer.core.compress.tool_output import compress_tool_output
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import CountCache
from ctxlayer.protocol import Message, ToolCall

BIG = "a" * 3_000_000
#: a count of a text this long is one that costs: the big text, or a cut of it
LONG = 100_000
BUDGET = 111_616


class Runs:
    """Tokens: each whitespace-separated run of characters is ceil(len / 8); the lengths of
    the long texts counted are kept in order."""

    name = "runs"

    def __init__(self) -> None:
        self.long: list[int] = []

    def count(self, text: str) -> int:
        if len(text) >= LONG:
            self.long.append(len(text))
        return sum(math.ceil(len(w) / 8) for w in text.split())


def head(*more: Message) -> list[Message]:
    return [Message(role="system", content="You help.", id="s"),
            Message(role="user", content="look at this blob", id="u0"), *more]


def call(arguments: str) -> Message:
    return Message(role="assistant", content="", id="a0",
                   tool_calls=[ToolCall(id="c1", name="write", arguments=arguments)])


def later_turns() -> list[Message]:
    out = []
    for i in range(4):
        out += [Message(role="user", content=f"question {i}", id=f"q{i}"),
                Message(role="assistant", content=f"answer {i}", id=f"r{i}")]
    return [*out, Message(role="user", content="what is it?", id="u1")]


CHATS = {
    # the newest message itself: the last resort shortens it
    "pasted by the user": head(Message(role="assistant", content="paste it", id="a0"),
                               Message(role="user", content=BIG, id="u1")),
    # a tool's output turns ago: the window outlines it
    "a tool's output": head(call('{"p": 1}'),
                            Message(role="tool", content=BIG, id="t0", tool_call_id="c1"),
                            *later_turns()),
}


def long_counts(messages: list[Message]) -> list[int]:
    runs = Runs()
    turn = prepare_turn(None, messages, BUDGET, CountCache(runs))
    assert turn.tokens <= BUDGET
    return runs.long


@pytest.mark.parametrize("chat", CHATS)
def test_the_big_text_is_counted_once_and_its_outline_once(chat):
    counted = long_counts(CHATS[chat])
    assert counted.count(len(BIG)) == 1, counted
    cuts = [n for n in counted if n != len(BIG)]
    assert len(cuts) == 1, f"one cut of the big text counted, not each try: {counted}"


def test_a_call_writing_the_big_text_counts_it_once():
    """The arguments are counted with their message; the long value inside them, another
    string as long, is not counted again to be shared its room."""
    arguments = json.dumps({"path": "blob.txt", "content": BIG})
    counted = long_counts(head(call(arguments),
                               Message(role="tool", content="ok", id="t0", tool_call_id="c1"),
                               *later_turns()))
    assert counted.count(len(arguments)) == 1, counted
    assert len(BIG) not in counted, f"the value inside the arguments counted again: {counted}"
    assert sum(counted) <= 1.5 * len(BIG), counted


@pytest.mark.parametrize("cap", [1, 4])
def test_a_tiny_cap_searches_the_first_words_within_it(cap):
    """A cap about the size of the omission mark ends in the text's first words, searched for
    among prefixes a cap's worth of characters long, never halves of the whole text."""
    runs = Runs()
    counter = CountCache(runs)
    short = compress_tool_output(BIG, cap, counter)
    assert short is not None and short.tokens_after <= cap
    assert runs.long == [len(BIG)], "only the whole text, for its size"
