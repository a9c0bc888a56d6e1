"""Regressions found on `bench/prepare_bench.py`'s synthetic chat (the trim benchmark's chat of
big code blocks and outputs, bench/synthetic.py), replayed request by request through the live
path as that benchmark does."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from synthetic import synthetic_chat

from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import CountCache
from ctxlayer.tokenizers import TiktokenCounter


def test_a_merge_of_every_chunk_that_comes_out_small_keeps_the_newest_chunks_beside_it():
    """At 30,000 tokens, 120 questions in: a step over the budget by one message merged
    every chunk (about two thirds of the request) into one that the texts it held left at a
    fifth of it, and the request went out at 48.8% of its budget. The newest chunks now stay
    beside a merge of the older ones."""
    budget, counter = 30_000, CountCache(TiktokenCounter("o200k_base"))
    chat = synthetic_chat(budget * 30, seed=11)
    asks = [i for i, m in enumerate(chat) if m.role == "user"][:120]
    state, used, over = None, [], False
    for q in asks:
        turn = prepare_turn(state, chat[:q + 1], budget, counter)
        assert turn.tokens <= budget
        state = turn.state
        over = over or state.cum[-1] > budget
        if over:
            used.append(turn.tokens / budget)
    assert len(state.chunks) > 1
    assert min(used) >= 0.6, min(used)
