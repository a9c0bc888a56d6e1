"""Texts holding a very long run of one repeated character, counted exactly without encoding it.

tiktoken's regex makes a run of one letter or one symbol ("aaaa...", "====...") a single piece,
and its byte-pair merge of a piece takes time in proportion to the piece's length, with a
large constant: 10 MB of one character took 5.6 s to count (`ctxlayer count`). No split the
regex would make helps there: the run is one piece.

What does: the merge of a run is periodic. A run of ``c`` is encoded as one token of ``p``
characters repeated (`a` as `aaaaaaaa` in o200k_base and cl100k_base, `=` as 64 of them), or
a few tokens repeated (cl100k's 🔥), with what is next to the run changing only the tokens
near its ends: the merge takes the lowest-ranked pair first, the leftmost of equal ones, and a
merge changes only its neighbours' pairs, whose tokens are no longer than the vocabulary's
longest. So taking whole periods out of the middle of a long run takes exactly their tokens
out of the count: a run of ``n`` is counted as one of ``keep`` to ``keep + p`` characters
plus ``q`` tokens for each ``p`` characters taken out.

The period of a character is read from tiktoken itself (the tokens of a sample run, then a
check that one more period adds ``q`` tokens), once per character and encoding; a character
whose sample shows no period, whitespace (blanks.py) and digits (pieces of three already)
are never shortened. tests/tokenizers/test_runs.py checks the count against tiktoken's for
every run length across several periods, for letters, symbols and multi-byte characters, with
text on both sides, in both encodings.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

#: runs this long or longer are shortened (tiktoken takes about 40 ms on 64k characters)
LONG_RUN = 16_384

#: characters a shortened run keeps at least: far more than the reach of its ends' tokens
#: (the vocabulary's longest token is 128 bytes)
KEEP = 2_048

#: a sample run: long enough that its middle holds several periods of the longest token
SAMPLE = 1_024

#: (characters, tokens) of one period of a run, None where a run is not shortened
Period = tuple[int, int] | None


def shortenable(c: str) -> bool:
    """Whether a run of ``c`` is one regex piece the merge makes periodic: no whitespace
    (blanks.py reads those), no digit (split into pieces of three anyway) and no lone
    surrogate (replaced before encoding, as encode_ordinary does: it has no UTF-8 of its own)."""
    return not c.isspace() and not unicodedata.category(c).startswith("N") \
        and c not in "\x1c\x1d\x1e\x1f" and not "\ud800" <= c <= "\udfff"


def period_of(c: str, encode: Callable[[str], list[int]], token_bytes: Callable[[int], bytes],
              count: Callable[[str], int]) -> Period:
    """One period of a long run of ``c`` as tiktoken encodes it (see the module docstring),
    read from a sample and checked on two runs longer than it; None when there is none."""
    tokens = encode(c * SAMPLE)
    middle = tokens[len(tokens) // 4: 3 * len(tokens) // 4]
    width = len(c.encode("utf-8"))
    for q in range(1, min(16, len(middle) // 3) + 1):
        if any(middle[i] != middle[i + q] for i in range(len(middle) - q)):
            continue
        size = sum(len(token_bytes(t)) for t in middle[:q])
        if size % width:
            return None
        p = size // width
        base = count(c * (KEEP + 1))
        if count(c * (KEEP + 1 + p)) != base + q or count(c * (KEEP + 1 + 2 * p)) != base + 2 * q:
            return None
        return p, q
    return None


def long_runs(text: str, min_chars: int) -> list[tuple[int, int]]:
    """The spans of runs of one shortenable character of ``min_chars`` or more, in order: a
    look at one character in ``min_chars // 2`` (such a run covers two neighbours of them),
    then at what lies between two alike."""
    step = max(1, min_chars // 2)
    samples = text[::step]
    spans: list[tuple[int, int]] = []
    for k in range(len(samples) - 1):
        c, at = samples[k], k * step
        if c != samples[k + 1] or (spans and at < spans[-1][1]) or not shortenable(c):
            continue
        if text.count(c, at, at + step + 1) != step + 1:
            continue
        # it started after the sample before, or that pair would have found it
        lo = max(0, at - step)
        start = lo + len(text[lo:at].rstrip(c))
        end = at + step + 1
        while end < len(text) and text[end] == c:
            more = min(len(text), end + step)
            if text.count(c, end, more) == more - end:
                end = more
            else:
                end += len(text[end:more]) - len(text[end:more].lstrip(c))
                break
        if end - start >= min_chars:
            spans.append((start, end))
    return spans


def shortened(text: str, period: Callable[[str], Period], min_chars: int = LONG_RUN,
              keep: int = KEEP) -> tuple[str, int]:
    """``text`` with whole periods taken out of each long run, and the tokens they held:
    the count of the first plus the second is the count of ``text``."""
    spans = long_runs(text, min_chars)
    if not spans:
        return text, 0
    parts: list[str] = []
    tokens, at = 0, 0
    for start, end in spans:
        c = text[start]
        got = period(c)
        if got is None:
            continue
        p, q = got
        periods = max(0, (end - start - keep) // p)
        parts += [text[at:start], c * (end - start - periods * p)]
        tokens += periods * q
        at = end
    parts.append(text[at:])
    return "".join(parts), tokens
