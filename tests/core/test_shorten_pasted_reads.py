"""A log a user pasted under a question is read once: the outline of what follows the question
takes over the log's lines, units and masked digits from the outline of the whole text (and
the text read from its leading blanks on, where its head is cut inside its first line), and
comes out exactly as a fresh read of that part would."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlayer.core.compress import logs
from ctxlayer.core.compress.logs import LogOutline
from ctxlayer.core.compress.shorten import shorten
from ctxlayer.core.compress.tool_output import Reading
from ctxlayer.core.tokens import WordTokenizer

#: lines a log is made of: plain steps, errors differing in their numbers, a Python
#: traceback, a message and its `at` stack, a JSON record with a stack, blanks
PIECES = [
    "2026-01-01 INFO step {n} ok",
    "2026-01-01 ERROR job {n} failed: disk full at /var/lib/db{n} (errno 28)",
    "Traceback (most recent call last):\n  File \"src/run.py\", line {n}, in main\n"
    "    go()\nKeyError: 'shard-{n}'",
    "Error: boom {n}\n    at f (a.js:{n}:2)\n    at g (b.js:3:4)",
    "    at h (c.js:{n}:1)",
    '{{"level": "error", "msg": "boom {n}", "stack": "at f (a.js:1:2)\\nat g (b.js:3:4)"}}',
    "",
    "   ",
    "FAILED tests/test_db.py::test_write_{n} - AssertionError",
]


def make_log(rng: random.Random, lines: int) -> str:
    return "\n".join(rng.choice(PIECES).format(n=rng.randrange(1000)) for _ in range(lines))


def fresh(self: Reading, start: int) -> Reading:
    """`Reading.after` as it was first written: the part read anew, nothing taken over."""
    return Reading(self.text[start:])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), lines=st.integers(1, 60), cut=st.integers(0, 59),
       lead=st.sampled_from([None, "", "r", "  x {", "Error: late"]))
def test_a_logs_outline_after_some_lines_is_that_of_a_fresh_read(seed, lines, cut, lead):
    """Its units are read only until one comes out as one of the whole's (an `at` stack
    after the cut takes no message line from before it; a traceback cut in its middle is
    read as what is left of it), the rest moved; ``lead``: the end of a line cut inside."""
    rng = random.Random(seed)
    text = make_log(rng, lines)
    raw = text.splitlines(keepends=True)
    cut = min(cut, len(raw))
    whole = LogOutline(text)
    rest_text = "".join(raw[cut:])
    if lead == "" and not rest_text:  # a text cut at its end: nothing left, not a line
        lead = None
    if lead is not None:  # the end of the line before, then its line break
        rest_text = lead + "\n" + rest_text if rest_text else lead
    got, want = whole.after(cut, lead), LogOutline(rest_text)
    assert (got.total, got.repeats, got.nonblank) == (want.total, want.repeats, want.nonblank)
    for keep in (1, 4, 12, 60):
        assert got.render(keep) == want.render(keep)


QUESTION = "why does my worker crash after the upgrade?"
LONG_FIRST = "please " + " ".join(f"word{k}" for k in range(400))  # over the head's share


@pytest.mark.parametrize("seed", range(40))
def test_a_pasted_log_is_shortened_as_it_was_with_everything_read_anew(seed, monkeypatch):
    """The shortened text is the one the fresh reads gave, with and without a question above
    and below, leading blanks, and a first line cut to its first words ('…')."""
    rng = random.Random(seed)
    log = make_log(rng, rng.randrange(20, 400))
    above = rng.choice(["", QUESTION + "\n", LONG_FIRST + "\n", QUESTION + "\n\n"])
    below = rng.choice(["", "\nwhat failed?"])
    blanks = rng.choice(["", "\n\n", "  ", " \n\t", "\r\n"])
    text = blanks + above + log + below
    cap = rng.choice([60, 150, 400, 1200])
    counter = WordTokenizer()
    got = shorten(text, cap, counter, keep_head=True)
    monkeypatch.setattr(Reading, "after", fresh)
    assert got == shorten(text, cap, counter, keep_head=True)


class Counted:
    """A pattern's `sub`, counted: the digits of how many units were masked."""

    def __init__(self, rx) -> None:
        self.rx, self.calls = rx, 0

    def sub(self, *args):
        self.calls += 1
        return self.rx.sub(*args)


def reads(monkeypatch) -> dict[str, int]:
    """How many times the log's text is denoised, and its lines scored and masked."""
    calls = {"prepare": 0, "score": 0}
    prepare, score = logs._prepare, logs._score

    def counted_prepare(text):
        calls["prepare"] += 1
        return prepare(text)

    def counted_score(line):
        calls["score"] += 1
        return score(line)

    monkeypatch.setattr(logs, "_prepare", counted_prepare)
    monkeypatch.setattr(logs, "_score", counted_score)
    return calls


LOG = "\n".join("2026-01-01 ERROR step 300 failed: disk full at /var/lib/db (errno 28)"
                if k % 500 == 300 else f"2026-01-01 INFO step {k} ok" for k in range(3000))


def test_a_log_pasted_under_a_question_is_scored_and_masked_once_a_line(monkeypatch):
    """Before: the log after the question was scanned and its digits masked again (0.3 s of a
    100k-line log's 2.9 s): 6,000 lines scored and masked for 3,000."""
    calls = reads(monkeypatch)
    masks = Counted(logs._MASK_DIGITS)
    monkeypatch.setattr(logs, "_MASK_DIGITS", masks)
    short = shorten(QUESTION + "\n" + LOG, 600, WordTokenizer(), keep_head=True)
    assert short is not None and short.text.startswith(QUESTION + "\n")
    assert calls["prepare"] == 1
    assert calls["score"] <= 3001 + 5  # the question, the log, the one line read again
    assert masks.calls <= 3001 + 5


def test_a_text_cut_to_its_first_words_is_not_read_again_from_its_blanks_on(monkeypatch):
    """A head that ends inside the first line ('…') outlines the text whole, its leading
    blanks stripped: that text was read anew, every line denoised and scored again."""
    calls = reads(monkeypatch)
    short = shorten("\n  " + LONG_FIRST + "\n" + LOG, 600, WordTokenizer(), keep_head=True)
    assert short is not None and short.text.startswith("please word0")
    assert calls["prepare"] == 2  # the whole text, then its first line alone
    assert calls["score"] <= 3002 + 5


@pytest.mark.parametrize("blanks", [" ", "\n", "\r\n", "\r", " \n\t ", "\x0c", "\u2028 ", "\n\x0b",
                                    "\x85\n "])
def test_a_reading_from_within_leading_blanks_is_that_of_a_fresh_read(blanks):
    """Wherever ``start`` falls among the blanks (between the two of a "\\r\\n" too), the
    log's lines taken over from the whole read outline as the part read anew."""
    text = blanks + QUESTION + "\n" + make_log(random.Random(7), 80)
    whole = Reading(text)
    whole.log()
    for start in range(1, len(blanks) + 2):
        got = whole.after(start)
        assert got.text == text[start:]
        for keep in (3, 20):
            assert got.log().render(keep) == LogOutline(text[start:]).render(keep)
