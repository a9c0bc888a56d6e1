"""A text's token count read from tiktoken's buffer encoding (no list of tokens built) is
`len(encode_ordinary(text))` for any text: special-token strings count as text, lone
surrogates as tiktoken replaces them, one by one and in a batch."""

from __future__ import annotations

import math
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlayer.tokenizers import TiktokenCounter, _runs

SPECIAL = ["<|endoftext|>", "<|fim_prefix|>", "<|im_start|>", "<|endofprompt|>"]
texts = st.lists(st.one_of(st.text(max_size=200), st.sampled_from(SPECIAL),
                           st.sampled_from(["\ud800", "\udfff", " \n\t", "🙂", "x" * 3000])),
                 max_size=8).map("".join)


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
@settings(max_examples=300, deadline=None)
@given(batch=st.lists(texts, max_size=30))
def test_a_count_is_the_length_of_the_ordinary_encoding(encoding, batch):
    counter = TiktokenCounter(encoding)
    expected = [len(counter.encoding.encode_ordinary(t)) for t in batch]
    assert [counter.count(t) for t in batch] == expected
    assert counter.count_batch(batch) == expected


def test_a_correction_rounds_up_one_by_one_and_in_a_batch():
    counter = TiktokenCounter("cl100k_base", correction=1.1)
    text = "<|endoftext|> def f(x):\n    return x\n" * 7
    n = len(counter.encoding.encode_ordinary(text))
    assert counter.count(text) == counter.count_batch([text])[0] == math.ceil(n * 1.1)


@given(lengths=st.lists(st.integers(0, 5000), max_size=60), chars=st.integers(1, 9000))
def test_a_batch_is_cut_into_runs_in_order_each_closed_by_the_text_reaching_its_size(lengths,
                                                                                    chars):
    texts = [f"{i}:" + "x" * k for i, k in enumerate(lengths)]
    runs = _runs(texts, chars)
    assert [t for run in runs for t in run] == texts
    assert all(runs)
    for run in runs[:-1]:
        assert sum(map(len, run[:-1])) < chars <= sum(map(len, run))


def _noting_threads(counter: TiktokenCounter, pause: float = 0.0) -> list[str]:
    """The name of the thread that counts each text, in the order counted (each count taking
    ``pause`` seconds more)."""
    length, seen = counter.length, []

    def noted(text: str) -> int:
        seen.append(threading.current_thread().name)
        time.sleep(pause)
        return length(text)

    counter._length = noted
    return seen


TEXTS = [f"def f_{i}(x):\n    return x * {i}\n" * 40 for i in range(60)]  # 60 runs of 1,000


def test_the_second_thread_of_a_batch_counts_only_while_it_is_helped(monkeypatch):
    monkeypatch.setattr("ctxlayer.tokenizers.BATCH_RUN_CHARS", 1000)
    counter = TiktokenCounter("cl100k_base")
    expected = [len(counter.encoding.encode_ordinary(t)) for t in TEXTS]
    threads = _noting_threads(counter)
    assert counter.count_batch(TEXTS, helped=lambda: False) == expected
    assert len(threads) == 60 and len(set(threads)) == 1, "never helped: one thread counted"

    asked = []

    def helped_three_times() -> bool:
        asked.append(True)
        return len(asked) <= 3

    threads.clear()
    assert counter.count_batch(TEXTS, helped=helped_three_times) == expected
    assert max(map(threads.count, threads)) >= 57, "the helper took at most the three runs it was let"


def test_a_helper_told_no_asks_again_and_helps_once_it_may(monkeypatch):
    monkeypatch.setattr("ctxlayer.tokenizers.BATCH_RUN_CHARS", 1000)
    counter = TiktokenCounter("cl100k_base")
    expected = [len(counter.encoding.encode_ordinary(t)) for t in TEXTS]
    threads = _noting_threads(counter, pause=0.002)  # 60 runs: 120 ms on one thread
    # another request under way until a third of the runs are counted, then none
    assert counter.count_batch(TEXTS, helped=lambda: len(threads) >= 20) == expected
    first = threads[0]
    assert threads[:20] == [first] * 20, "no help while told no"
    assert {t for t in threads[20:] if t != first}, "the helper came back once it might"
