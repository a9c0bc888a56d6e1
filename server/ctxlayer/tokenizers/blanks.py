"""Texts holding a very long run of whitespace, counted exactly around tiktoken's regex.

tiktoken cuts a text into pieces with a backtracking regex (fancy-regex) and encodes each piece
on its own. Its `\\s+(?!\\S)` alternative keeps one backtracking step per whitespace character it
takes, and past about 1,000,000 (a limit of fancy-regex) the whole count fails: "Max stack size
exceeded for backtracking". One such output in a chat's history made every later turn fail.

Which runs that is, for both patterns shipped (o200k_base and cl100k_base, `KNOWN_PATTERNS`):
a whitespace run is cut by `\\s*[\\r\\n]+` (cl100k: `\\s*[\\r\\n]`) up to its last \\r or \\n, a
match the regex makes without that stack (runs of 1.1M spaces and newlines count fine). What
follows the last newline is a *blank stretch* (whitespace without \\r or \\n) ending at the
text's end or at a character that is no whitespace, and only it reaches `\\s+(?!\\S)` (or
cl100k's `\\s++$`). At the text's end it is one piece; before a character it is one piece but
its last character, which goes with the next piece (" word") or stands alone.

So a long blank stretch at ``start:end`` is counted as three parts: the text before it through
the regex (a piece always ends at ``start``: after the run's last newline, or at a run that
has none, where no piece reaches into it; the pieces there never look past ``start``), the
stretch but its last character as one piece encoded without the regex (tiktoken's own
`encode_single_piece`, the same byte-pair encoding its pieces get), and the text from that
last character on through the regex (a piece starts there, and the regex never looks back).
tests/tokenizers/test_blanks.py checks it against the whole count for every run length up to
5,000, with the stretch length made small, for both encodings.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable

log = logging.getLogger(__name__)

#: the stretches cut out: at this length tiktoken's regex still has 15x the room it needs
LONG_BLANKS = 65_536

#: Unicode's White_Space (what `\s` of tiktoken's Rust regex matches) but \r and \n; Python's
#: own `\s` also takes \x1c-\x1f, which the Rust regex does not
BLANK = "\t\x0b\x0c \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"

#: tiktoken's patterns whose split of whitespace this module's reading (above) is of
KNOWN_PATTERNS = frozenset({
    # o200k_base
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    # cl100k_base
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"
    r"\s++$|\s*[\r\n]|\s+(?!\S)|\s",
})


@functools.cache
def _stretches(min_chars: int) -> re.Pattern[str]:
    """Blank stretches of at least ``min_chars``, each whole (the lookbehind: one search per
    stretch, not one per character of it)."""
    return re.compile(f"(?<![{BLANK}])[{BLANK}]{{{min_chars},}}")


_ALL_BLANK = re.compile(f"[{BLANK}]*")
_PAIRS = re.compile(f"(?=[{BLANK}]{{2}})")


def has_long_blanks(text: str, min_chars: int = LONG_BLANKS) -> bool:
    """Whether ``text`` may hold a blank stretch of ``min_chars``: a look at one character
    in ``min_chars // 2`` (such a stretch covers two neighbours of them and all between), then
    at what lies between two blank ones, which stops at its first other character. The search
    for the stretches themselves took 68 ms a megabyte, a fifth of the count; this, nothing."""
    step = min_chars // 2
    if step < 2:
        return True
    samples = text[::step]
    return any(_ALL_BLANK.fullmatch(text, j * step, (j + 1) * step + 1)
               for j in (m.start() for m in _PAIRS.finditer(samples)))


def counted_around_blanks(text: str, whole: Callable[[str], int], piece: Callable[[str], int],
                          min_chars: int = LONG_BLANKS) -> int:
    """``text``'s token count, each blank stretch of ``min_chars`` or more that reaches
    tiktoken's `\\s+(?!\\S)` counted by ``piece`` (one piece, no regex) and the rest by
    ``whole``: the same count as ``whole(text)`` (see the module's docstring), which past about
    1M blank characters fails."""
    total, at = 0, 0
    for m in _stretches(min_chars).finditer(text):
        start, end = m.span()
        if end < len(text) and text[end] in "\r\n":
            continue  # the run's last newline is further on: `\s*[\r\n]+` takes it whole
        last = end if end == len(text) else end - 1  # its last character goes with the next
        total += whole(text[at:start]) + (piece(text[start:last]) if last > start else 0)
        at = last
    return total + whole(text[at:])


def read_as_known(pattern: str, encoding: str) -> bool:
    """Whether the module's reading of the whitespace split holds for ``pattern``; if not (a
    tiktoken with other patterns), the counts of texts with a long blank stretch are the same
    three parts, which are no longer shown exact: said once in the log."""
    if pattern in KNOWN_PATTERNS:
        return True
    log.warning("%s: tiktoken's pattern is not one whose split of whitespace ctxlayer knows; "
                "a text with a run of %s or more blanks is counted in parts, which may differ "
                "from the exact count by a token or two per run", encoding, f"{LONG_BLANKS:,}")
    return False
