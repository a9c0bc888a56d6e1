"""The warm path end to end in the OpenAI format: each turn arrives as fresh JSON; decoding it
with the previous turn's Decoded, trimming with the TrimCache and encoding the kept messages
gives exactly what a cold decode, trim and encode of the same body give (the payload sent, the
tokens and every audit entry)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_trim_warm import turns

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synthetic import as_openai

from ctxlayer.core.errors import ContextError
from ctxlayer.core.formats import decode, encode
from ctxlayer.core.memo import Memo
from ctxlayer.core.tokens import CountCache, WordTokenizer
from ctxlayer.core.trim import TrimCache, TrimOptions, trim

COUNTER = CountCache(WordTokenizer())


def _turn(body: str, budget: int, options, previous=None, **caches):
    """(outcome, decoded) of one request; `body` is parsed here, as the daemon's framing does."""
    try:
        d = decode("openai", json.loads(body), COUNTER, previous=previous)
        r = trim(d.messages, budget, COUNTER, options=options, **caches)
        out = encode(d, r.messages)
    except ContextError as e:
        return ("error", str(e)), None
    return (out.payload, out.audit, r.tokens, r.dropped, r.truncated), d


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chats=turns(), budget=st.one_of(st.integers(1, 300), st.integers(1, 1500)),
       rewrite=st.booleans())
def test_warm_openai_turns_equal_cold(chats, budget, rewrite):
    options = TrimOptions(rewrite_when_fits=rewrite)
    memo, cache, previous = Memo(), TrimCache(), None
    for chat in chats:
        body = json.dumps({"model": "gpt-4o", "messages": [as_openai(m) for m in chat]})
        warm, decoded = _turn(body, budget, options, previous, memo=memo, cache=cache)
        cold, _ = _turn(body, budget, options)
        assert warm == cold
        previous = decoded or previous


def test_a_turn_that_only_appends_takes_over_every_message():
    chat = [{"role": "user" if k % 2 == 0 else "assistant", "content": f"m{k} " * 40}
            for k in range(12)]
    cache, options = TrimCache(), TrimOptions()
    first, d1 = _turn(json.dumps({"messages": chat}), 300, options, memo=Memo(), cache=cache)
    grown = json.dumps({"messages": [*chat, {"role": "user", "content": "and now?"}]})
    warm, d2 = _turn(grown, 300, options, d1, memo=Memo(), cache=cache)
    assert cache.reused == 12 and d2.messages[:12] == d1.messages
    assert warm == _turn(grown, 300, options)[0]


def test_a_message_shortened_otherwise_than_last_turn_is_written_as_now():
    """encode writes a message the previous turn shortened the same way as it wrote it then,
    without building it again; shortened another way (its text, its calls' arguments), or at a
    position whose message changed since, it is written as this turn shortened it."""
    call = {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    chat = [{"role": "user", "content": [image, {"type": "text", "text": "look " * 50}]},
            {"role": "assistant", "content": "thinking " * 30, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "output"}]

    def turn(messages, previous, shorten):
        d = decode("openai", json.loads(json.dumps({"model": "gpt-4o", "messages": messages})),
                   COUNTER, previous=previous)
        kept = [msgspec.structs.replace(m, **shorten[k]) if k in shorten else m
                for k, m in enumerate(d.messages)]
        return d, encode(d, kept).payload["messages"]

    cut = "cut once"
    d1, out = turn(chat, None, {0: {"content": ""}, 1: {"content": cut}})
    assert out[1]["content"] == cut and out[0]["content"] == [image]
    grown = [*chat, {"role": "user", "content": "next?"}]
    d2, out = turn(grown, d1, {0: {"content": ""}, 1: {"content": cut}})
    assert out[1]["content"] == cut
    d3, out = turn(grown, d2, {1: {"content": "cut again"}})
    assert out[1]["content"] == "cut again"
    calls = [msgspec.structs.replace(d3.messages[1].tool_calls[0], arguments='{"a": 1}')]
    d4, out = turn(grown, d3, {1: {"content": "cut again", "tool_calls": calls}})
    assert out[1]["content"] == "cut again"
    assert out[1]["tool_calls"][0]["function"]["arguments"] == '{"a": 1}'
    other = {"type": "image_url", "image_url": {"url": "https://example.com/b.png"}}
    edited = [{**grown[0], "content": [other, grown[0]["content"][1]]}, *grown[1:]]
    _, out = turn(edited, d2, {0: {"content": ""}})
    assert out[0]["content"] == [other]
