"""A text with a long run of one repeated character is counted exactly (runs.py): whole
periods of the run taken out, and their tokens added back, give the count of the whole text,
checked here at every run length up to 600 with the run length and the part kept made small
(128 characters, about two of the longest run tokens: at 8 and 32 the ends' tokens reach past
it and counts differ), for letters, symbols and multi-byte characters, text on both sides.
10 MB of one character took 5.6 s to count whole; shortened, under 0.1 s (bench, not here)."""

from __future__ import annotations

import pytest

from ctxlayer.tokenizers import ENCODINGS, TiktokenCounter, _length_of, _whole_length, runs

#: letters (lower, upper, with a period of 2 or 8), symbols (16 and 64 characters a token),
#: an apostrophe (the contractions' character), multi-byte ones (a combining mark, an emoji
#: cl100k takes three tokens a period for)
CHARACTERS = ["a", "Z", "q", "!", "=", "'", "é", "字", "\u0301", "🔥", "я"]
BEFORE = ["", "word ", "Hi", "!", "12", "x\u0301", "\n", "é", "'"]
AFTER = ["", " word", "b", "'s", "!x", "\n", "42", "\u0301a", "🔥"]
KEEP = 128


def _counts(encoding: str, keep: int = KEEP):
    enc = TiktokenCounter(encoding).encoding
    return _length_of(enc, long_run=2 * keep, keep=keep), _whole_length(enc)


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("character", CHARACTERS)
def test_every_run_length_up_to_600_counts_as_the_whole_text(encoding, character):
    shortened, whole = _counts(encoding)
    for n in range(1, 601):
        before, after = BEFORE[n % len(BEFORE)], AFTER[n // len(BEFORE) % len(AFTER)]
        text = before + character * n + after
        assert shortened(text) == whole(text), (n, before, after)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_runs_of_the_default_sizes_count_as_the_whole_text(encoding):
    enc = TiktokenCounter(encoding).encoding
    shortened, whole = _length_of(enc), _whole_length(enc)
    for text in ["Hello " + "x" * 100_003 + " world",
                 "=" * 70_001 + "\n" + "a" * 40_000 + "B" * 33_333 + "!" * 20_000 + "'s",
                 "1234" * 10_000 + " " * 70_000 + "é" * 50_001]:
        assert shortened(text) == whole(text)


def test_a_long_run_is_taken_out_but_its_ends_and_what_is_around_it():
    enc = TiktokenCounter("o200k_base").encoding
    whole = _whole_length(enc)
    period = runs.period_of("x", enc.encode_ordinary, enc.decode_single_token_bytes, whole)
    assert period == (8, 1)  # "xxxxxxxx", one token
    text, taken = runs.shortened("say " + "x" * 10_000_000 + " done", lambda c: period)
    assert text.startswith("say x") and text.endswith("x done")
    assert runs.KEEP <= len(text) - len("say  done") < runs.KEEP + 8
    assert taken == (10_000_000 - (len(text) - len("say  done"))) // 8
    assert whole(text) + taken == len(enc.encode_ordinary("say " + "x" * 100_000 + " done")) \
        + (10_000_000 - 100_000) // 8


def test_whitespace_and_digits_are_never_shortened():
    assert not runs.shortenable(" ") and not runs.shortenable("\n")
    assert not runs.shortenable("7") and not runs.shortenable("\x1c")
    assert runs.long_runs(" " * 50_000 + "1" * 50_000, 1_000) == []
    assert runs.long_runs("ab" + "c" * 5_000 + "d", 1_000) == [(2, 5_002)]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_long_run_of_a_lone_surrogate_counts_as_the_whole_text(encoding):
    """A lone surrogate has no UTF-8: its run is never shortened (reading its period raised
    UnicodeEncodeError, where the whole count replaces it as encode_ordinary does; the review
    probe: 16,384 of U+D800 in a library call)."""
    enc = TiktokenCounter(encoding).encoding
    shortened, whole = _length_of(enc), _whole_length(enc)
    text = "a" + "\ud800" * 16_384 + "b"
    assert shortened(text) == whole(text)
