"""A text's token count read from tiktoken's buffer encoding (no list of tokens built) is
`len(encode_ordinary(text))` for any text: special-token strings count as text, lone
surrogates as tiktoken replaces them, one by one and in a batch."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlayer.tokenizers import TiktokenCounter, _parts

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


@given(lengths=st.lists(st.integers(0, 5000), max_size=60), n=st.integers(1, 9))
def test_a_batch_is_cut_into_at_most_n_runs_in_order_none_much_over_its_share(lengths, n):
    texts = [f"{i}:" + "x" * k for i, k in enumerate(lengths)]
    parts = _parts(texts, n)
    assert [t for part in parts for t in part] == texts
    assert len(parts) <= n and all(parts)
    share = sum(map(len, texts)) / n
    for part in parts[:-1]:  # each run closes at the text that takes it past its share
        assert sum(map(len, part[:-1])) < share + 1 or len(part) == 1
