"""Tool-call arguments nested deeper than a JSON decoder follows (it raises RecursionError,
not a decode error): every reader of arguments takes them as text. Each reader let the error
through, and an audit line, a summary or an Anthropic assembly of a chat holding such a call
was an internal error on every turn after it."""

from __future__ import annotations

import pytest

from ctxlayer.core.assembly.actions import target_of
from ctxlayer.core.compress.ledger import arguments_text, shell_commands
from ctxlayer.core.compress.shorten import shorten_arguments
from ctxlayer.core.formats import decode, encode
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message, ToolCall

DEPTH = 5000  # past any decoder's depth, whatever the stack under it
DEEP = '{"command": "pytest -x", "a": ' + "[" * DEPTH + "1" + "]" * DEPTH + "}"


@pytest.fixture
def call_message() -> Message:
    return Message(role="assistant", content="", id="a1",
                   tool_calls=[ToolCall(id="c1", name="bash", arguments=DEEP)])


def test_every_reader_of_arguments_takes_them_as_text(call_message):
    assert arguments_text(DEEP) == DEEP
    assert shell_commands(call_message) == []
    assert target_of(DEEP).startswith('{"command": "pytest -x"')
    assert describe(call_message).startswith("assistant: bash({\"command\": \"pytest -x\"")
    assert shorten_arguments(DEEP, 64, WordTokenizer()) is None


def test_anthropic_input_carries_them_whole_as_text(call_message):
    counter = WordTokenizer()
    history = [Message(role="user", content="run it", id="u1"), call_message,
               Message(role="tool", content="ok", tool_call_id="c1", id="t1")]
    decoded = decode("anthropic", {"model": "claude-sonnet-4-5", "max_tokens": 10,
                                   "messages": [{"role": "user", "content": "run it"}]}, counter)
    out = encode(decoded, history)
    uses = [b for m in out.payload["messages"] if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_use"]
    assert [b["input"] for b in uses] == [{"arguments": DEEP}]
    assert any("not a JSON object" in e.reason for e in out.audit)
