"""A conversation's first request counts its texts in one batch, outside the counting lock, and
with a second thread only while no other request is under way or just ended: two encoding
threads on a two-core machine leave the event loop no core, and another chat's small request
waited twice as long. Counts and cache are those of one by one either way."""

from __future__ import annotations

import asyncio
import threading
import time

from ctxlayer.core.tokens import CountCache
from ctxlayer.state import tokens
from ctxlayer.state.tokens import GuardedCounter, Tokenizers
from ctxlayer.tokenizers import TiktokenCounter

TEXTS = ["", "one", "def f(x):\n    return x * 2\n", "one", "é中文🙂 " * 50,
         "x = compute(y) + 1\n" * 16_000, "a fairly long line of prose " * 3_000]


class Noting(TiktokenCounter):
    """A tiktoken counter that notes each batch and whether it was let take a second thread."""

    def __init__(self) -> None:
        super().__init__("cl100k_base")
        self.helped: list[bool] = []

    def count_batch(self, texts, helped=None):
        self.helped.append(helped())
        return super().count_batch(texts, helped)


def test_alone_with_one_request_under_way_and_none_just_ended(monkeypatch):
    monkeypatch.setattr(tokens, "ALONE_AFTER", 0.2)
    t = Tokenizers()
    time.sleep(0.25)
    assert t.alone()
    with t.answering():
        assert t.alone()  # the one counting
        with t.answering():
            assert not t.alone()  # another under way
        assert not t.alone()  # another just ended
        time.sleep(0.25)
        assert t.alone()


def test_a_batch_off_the_loop_is_counted_as_one_by_one_kept_and_asks_whether_alone(monkeypatch):
    monkeypatch.setattr(tokens, "ALONE_AFTER", 0.0)
    t = Tokenizers()
    noting = Noting()
    guarded = GuardedCounter(CountCache(noting), threading.Lock(), t.alone)
    expected = [TiktokenCounter("cl100k_base").count(x) for x in TEXTS]
    assert guarded.count_many(TEXTS) == expected
    assert len(guarded.cache) == len({x for x in TEXTS if x}), "every text counted is kept"
    with t.answering(), t.answering():  # another request under way: one thread
        guarded.cache = CountCache(noting)
        assert guarded.count_many(TEXTS) == expected
    assert noting.helped == [True, False]
    assert guarded.count_many(TEXTS) == expected and noting.helped == [True, False], \
        "kept: the cache answers without a batch"


async def test_on_the_loop_a_batch_never_takes_threads():
    noting = Noting()
    guarded = GuardedCounter(CountCache(noting), threading.Lock(), lambda: True)
    expected = [TiktokenCounter("cl100k_base").count(x) for x in TEXTS]
    assert guarded.count_many(TEXTS) == expected
    assert noting.helped == []
    assert await asyncio.to_thread(guarded.count_many, TEXTS) == expected  # kept already


def test_the_state_guarded_counter_asks_the_state_whether_alone(state):
    guarded = state.tokenizers.guarded("gpt-4o")
    assert guarded.alone == state.tokenizers.alone
