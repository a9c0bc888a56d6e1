"""The warm path end to end in the OpenAI format: each turn arrives as fresh JSON; decoding it
with the previous turn's Decoded, trimming with the TrimCache and encoding the kept messages
gives exactly what a cold decode, trim and encode of the same body give (the payload sent, the
tokens and every audit entry)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

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
