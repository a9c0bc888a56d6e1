"""A text with long runs of blanks is counted exactly (blanks.py): the stretch after a run's
last newline cut out and encoded as one piece, the rest through tiktoken's regex, gives the
count of the whole text, checked here at every run length up to 5,000 with the stretch
length made small; a run of 1M blanks, which made tiktoken's regex fail, is counted."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlayer.core.errors import ContextError
from ctxlayer.tokenizers import ENCODINGS, TiktokenCounter, _length_of, _whole_length
from ctxlayer.tokenizers.blanks import (
    KNOWN_PATTERNS,
    _stretches,
    counted_around_blanks,
    has_long_blanks,
)

#: runs of whitespace of length n: blanks alone, newlines alone, blanks after and among
#: newlines (the stretch after the last newline is what is cut out), every blank the Rust
#: regex's \s knows, and \x1c, which only Python's \s takes for whitespace
RUNS = {
    "spaces": lambda n: " " * n,
    "tabs": lambda n: "\t" * n,
    "newlines": lambda n: "\n" * n,
    "mixed": lambda n: (" \t\u3000\xa0 \x0b\x0c\x85\u2028\u2029\u2000\u200a\u202f\u205f"
                        "\u1680" * n)[:n],
    "newline first": lambda n: ("\n" + " " * n)[:n],
    "newlines among": lambda n: ("   \n \t" * n)[:n],
    "crlf first": lambda n: ("\r\n" + " \t" * n)[:n],
    "file separator": lambda n: ("  \x1c" * n)[:n],
}
BEFORE = ["", "word", "a!", "!\n", "x\u0301", "12"]
AFTER = ["", "word", "!x", "\n", "'s", " 42", "\u0301a"]


def _counts(encoding: str, long_blanks: int):
    enc = TiktokenCounter(encoding).encoding
    return _length_of(enc, long_blanks), _whole_length(enc)


def test_the_patterns_shipped_are_the_ones_whose_split_of_whitespace_is_known():
    for name in ENCODINGS:
        assert TiktokenCounter(name).encoding._pat_str in KNOWN_PATTERNS


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("run", sorted(RUNS))
def test_every_run_length_up_to_5000_counts_as_the_whole_text(encoding, run):
    cut_at = {m: _counts(encoding, m)[0] for m in (1, 2, 3, 64)}
    whole = _counts(encoding, 1)[1]
    for n in range(1, 5001):
        before, after = BEFORE[n % len(BEFORE)], AFTER[n // len(BEFORE) % len(AFTER)]
        text = before + RUNS[run](n) + after
        m = (1, 2, 3, 64)[n % 4]
        assert cut_at[m](text) == whole(text), (n, before, after, m)


pieces = st.one_of(st.sampled_from(["word", "Word", "!", "'s", "42", "\u0301", "é", "/", "中"]),
                   st.text(alphabet=" \t\n\r\u3000\xa0\x1c\u2028", min_size=1, max_size=300))


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=400, deadline=None)
@given(parts=st.lists(pieces, max_size=12), long_blanks=st.integers(1, 40))
def test_texts_of_many_runs_count_as_the_whole_text(encoding, parts, long_blanks):
    text = "".join(parts)
    length, whole = _counts(encoding, long_blanks)
    assert length(text) == whole(text)


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("run", [" ", "\t", " \t"])
def test_a_run_of_a_million_blanks_before_a_word_is_counted(encoding, run):
    counter = TiktokenCounter(encoding)
    blanks = (run * 1_000_000)[:1_000_000]
    piece = len(counter.encoding._encode_single_piece(blanks[:-1].encode()))
    expected = len(counter.encoding.encode_ordinary("x\n")) + piece + len(
        counter.encoding.encode_ordinary(blanks[-1] + "word"))
    assert counter.count("x\n" + blanks + "word") == expected
    assert counter.count_batch(["hi", "x\n" + blanks + "word"])[1] == expected


def test_what_tiktoken_fails_on_is_the_domains_refusal():
    class Failing:
        name = "failing"

        def encode_ordinary(self, text):
            raise ValueError("Regex error while tokenizing: Max stack size exceeded")

        def _encode_single_piece(self, piece):
            return []

    length = _length_of(Failing())
    for text in ("short", "long " * 20_000):
        with pytest.raises(ContextError, match="tiktoken cannot count .*Max stack size") as exc:
            length(text)
        assert exc.value.kind == "invalid"


def test_a_tiny_stretch_length_still_counts_an_empty_piece_as_nothing():
    assert counted_around_blanks(" x", len, lambda s: 1 / 0, 1) == 2


@settings(max_examples=500, deadline=None)
@given(parts=st.lists(pieces, max_size=20), long_blanks=st.integers(1, 200))
def test_a_text_with_a_long_stretch_is_never_taken_for_one_without(parts, long_blanks):
    text = "".join(parts)
    if _stretches(long_blanks).search(text):
        assert has_long_blanks(text, long_blanks)
