"""Many texts counted at once: the same counts as one by one, whichever face counts them (the
count cache, the guarded counter of a worker, the guarded counter on the event loop while a
worker holds the cache), and the counting lock not held while the texts are encoded."""

from __future__ import annotations

import asyncio
import threading

from ctxlayer.core.tokens import CountCache, message_tokens, messages_tokens
from ctxlayer.protocol import Message, ToolCall
from ctxlayer.state.tokens import GuardedCounter
from ctxlayer.tokenizers import TiktokenCounter

TEXTS = ["", "one", "def f(x):\n    return x * 2\n", "one", "é中文🙂 " * 50,
         "a fairly long line of prose " * 300]
MESSAGES = [Message(role="user", content=t) for t in TEXTS] + [
    Message(role="assistant", content="", tool_calls=[
        ToolCall(id="c1", name="read", arguments='{"path": "src/a.py"}'),
        ToolCall(id="c2", name="bash", arguments='{"cmd": "pytest -k retry"}')]),
    Message(role="tool", tool_call_id="c1", content="x = 1\n" * 40, parts_tokens=85)]


class Watching(TiktokenCounter):
    """Records whether the counting lock was held while a batch was encoded."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__("cl100k_base")
        self.lock, self.held = lock, []

    def count_batch(self, texts: list[str]) -> list[int]:
        self.held.append(self.lock.locked())
        return super().count_batch(texts)


def test_a_batch_counts_what_one_by_one_counts_and_is_kept():
    one = TiktokenCounter("cl100k_base")
    expected = [one.count(t) for t in TEXTS]
    cache = CountCache(TiktokenCounter("cl100k_base"))
    assert cache.count_many(TEXTS) == expected
    assert len(cache) == len({t for t in TEXTS if t}), "every text counted is kept"
    assert messages_tokens(MESSAGES, cache) == [message_tokens(m, one) for m in MESSAGES]


def test_a_guarded_batch_encodes_outside_the_lock_and_fills_the_cache():
    lock = threading.Lock()
    tokenizer = Watching(lock)
    cache = CountCache(tokenizer)
    guarded = GuardedCounter(cache, lock)
    expected = [TiktokenCounter("cl100k_base").count(t) for t in TEXTS]
    assert guarded.count_many(TEXTS) == expected
    assert tokenizer.held == [False], "the batch was encoded with the counting lock held"
    assert cache.count_many(TEXTS) == expected and tokenizer.held == [False], "not kept"
    assert messages_tokens(MESSAGES, guarded) == [message_tokens(m, cache) for m in MESSAGES]


def test_on_the_loop_a_guarded_batch_does_not_wait_for_a_worker():
    lock = threading.Lock()
    guarded = GuardedCounter(CountCache(TiktokenCounter("cl100k_base")), lock)
    expected = [TiktokenCounter("cl100k_base").count(t) for t in TEXTS]

    async def on_loop() -> list[int]:
        return guarded.count_many(TEXTS)

    with lock:  # a worker holds the cache
        assert asyncio.run(on_loop()) == expected
