"""The OpenAI encoder's repair (every tool message after its call, every call with its
result) of a request that needs none: one walk, no Python call a message (a warm re-trim of 1M
tokens writes 250 messages back every turn)."""

from __future__ import annotations

import sys

import pytest

from ctxlayer.core.formats import decode, encode
from ctxlayer.core.tokens import CountCache, WordTokenizer

COUNTER = CountCache(WordTokenizer())


@pytest.mark.parametrize("steps", [50, 150])
def test_the_openai_repair_of_a_request_that_needs_none_calls_nothing_per_message(steps):
    """A request whose tool calls all have their results (every turn of a chat the fit kept
    whole groups of) is written back without a Python call a message: one per message was half
    of the repair's walk on a warm re-trim of 1M tokens."""
    raw = []
    for k in range(steps):
        raw += [{"role": "user", "content": f"q{k}"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"c{k}", "type": "function",
                     "function": {"name": "read", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": f"c{k}", "content": f"out {k}"},
                {"role": "assistant", "content": f"done {k}"}]
    d = decode("openai", {"model": "gpt-4o", "messages": raw}, COUNTER)
    made = []

    def profile(frame, event, arg):
        if event == "call":
            made.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        out = encode(d, d.messages)
    finally:
        sys.setprofile(None)
    assert out.payload["messages"] == raw and not out.audit
    assert len(made) < 10, sorted(set(made))
