"""Many texts counted at once by the count cache (one batch over threads): the same counts as
one by one, and every text kept. (The daemon's guarded counter takes a second thread only while
no other request is under way: see GuardedCounter in state/tokens.py.)"""

from __future__ import annotations

from ctxlayer.core.tokens import BATCH_MIN_CHARS, CountCache, message_tokens, messages_tokens
from ctxlayer.protocol import Message, ToolCall
from ctxlayer.tokenizers import TiktokenCounter

TEXTS = ["", "one", "def f(x):\n    return x * 2\n", "one", "é中文🙂 " * 50,
         "a fairly long line of prose " * 300, "x = compute(y) + 1\n" * 16_000]
MESSAGES = [Message(role="user", content=t) for t in TEXTS] + [
    Message(role="assistant", content="", tool_calls=[
        ToolCall(id="c1", name="read", arguments='{"path": "src/a.py"}'),
        ToolCall(id="c2", name="bash", arguments='{"cmd": "pytest -k retry"}')]),
    Message(role="tool", tool_call_id="c1", content="x = 1\n" * 40, parts_tokens=85)]


def test_a_batch_counts_what_one_by_one_counts_and_is_kept():
    assert sum(map(len, TEXTS)) >= BATCH_MIN_CHARS, "long enough to be counted in a batch"
    one = TiktokenCounter("cl100k_base")
    expected = [one.count(t) for t in TEXTS]
    cache = CountCache(TiktokenCounter("cl100k_base"))
    assert cache.count_many(TEXTS) == expected
    assert len(cache) == len({t for t in TEXTS if t}), "every text counted is kept"
    assert messages_tokens(MESSAGES, cache) == [message_tokens(m, one) for m in MESSAGES]
