"""Information density: zlib ratio and novelty against what is already in context."""

from __future__ import annotations

import pytest

from ctxlayer.core.compress import (
    NEW_ABOVE,
    REPEATED_BELOW,
    NoveltyIndex,
    compression_ratio,
    incremental_novelty,
    shingles,
)

PARA = (
    "The trim engine keeps pinned messages, drops ephemeral thinking after its time to live, "
    "and fills the budget from the newest message backwards so that recent turns survive."
)
OTHER = (
    "Workspace segments are rebuilt only when the watcher reports a change to a tracked file, "
    "which keeps the cached system prompt stable across many requests in a session."
)


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [
        ("", 1.0, 1.0),
        ("a" * 10_000, 0.0, 0.01),
        (PARA * 50, 0.0, 0.05),
        (PARA, 0.5, 1.0),
        ("x", 1.0, 20.0),  # zlib's header outweighs one byte
    ],
)
def test_compression_ratio(text, low, high):
    assert low <= compression_ratio(text) <= high


@pytest.mark.parametrize(
    ("indexed", "text", "low", "high"),
    [
        ([], PARA, 1.0, 1.0),
        ([PARA], PARA, 0.0, 0.0),
        ([PARA], PARA.upper().replace(",", " ;"), 0.0, 0.0),  # case and punctuation ignored
        ([PARA], OTHER, 1.0, 1.0),
        ([PARA], PARA + " " + OTHER, 0.4, 0.7),
        ([PARA, OTHER], OTHER + " " + PARA, 0.0, 0.3),
        ([PARA], "", 0.0, 0.0),
        (["ok thanks"], "ok thanks", 0.0, 0.0),  # shorter than a window: one shingle
        (
            ["上下文窗口是有限的塞进去的内容会互相稀释"],
            "上下文窗口是有限的塞进去的内容会互相稀释",
            0.0,
            0.0,
        ),
        (
            ["上下文窗口是有限的塞进去的内容会互相稀释"],
            "模型记住的可能是无关紧要的日志格式",
            1.0,
            1.0,
        ),
    ],
)
def test_novelty(indexed, text, low, high):
    index = NoveltyIndex(indexed)
    assert low <= index.novelty(text) <= high


def test_thresholds_are_the_seed_values():
    assert (REPEATED_BELOW, NEW_ABOVE) == (0.3, 0.7)


def test_incremental_novelty_over_a_conversation():
    assert incremental_novelty([PARA, OTHER, PARA, PARA + " " + OTHER]) == [
        1.0,
        1.0,
        0.0,
        pytest.approx(7 / 61, abs=0.2),
    ]


def test_index_stores_hashes_not_text():
    index = NoveltyIndex()
    index.add(PARA * 100)
    assert len(index) == len(shingles(PARA * 100)) < 60
    assert all(isinstance(h, int) for h in shingles(PARA))


def test_shingles_are_stable_across_processes():
    # A fixed value: CRC32 words and a fixed polynomial, never Python's salted hash().
    assert shingles("one two three") == shingles("ONE two, three!") == {1745129903471609063}
    assert shingles("a b c d e f g h i j") < shingles("a b c d e f g h i j k")
