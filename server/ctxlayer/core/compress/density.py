"""Information density: how compressible a text is, and how much of it is new.

Owns `compression_ratio`, `NoveltyIndex` and the two thresholds. Pure and linear; the index
stores one integer per distinct shingle (not the text), so its memory is constant per shingle.

Shingles are windows of SHINGLE_WORDS consecutive words. Words are lowercased runs of letters
and digits, and every CJK character counts as a word (CJK text has no spaces). A text shorter
than a window is one shingle of all its words. Shingles are hashed with a polynomial rolling
hash over per-word CRC32s, so the hashes are the same in every process (no salted `hash()`).

Reading novelty (gptme's incremental compression analysis):
  novelty < REPEATED_BELOW (0.3): mostly already in context, the first compression target;
  novelty > NEW_ABOVE (0.7): new information, keep it.
A text with no words has novelty 0.0 (it adds nothing).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable

__all__ = [
    "NEW_ABOVE",
    "REPEATED_BELOW",
    "SHINGLE_WORDS",
    "NoveltyIndex",
    "compression_ratio",
    "incremental_novelty",
    "shingles",
]

SHINGLE_WORDS = 8
REPEATED_BELOW = 0.3
NEW_ABOVE = 0.7

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")
_MOD = (1 << 61) - 1
_BASE = 1_000_003
_BASE_POW = pow(_BASE, SHINGLE_WORDS, _MOD)


def compression_ratio(text: str) -> float:
    """zlib-compressed size over raw UTF-8 size: low means repetitive (1.0 for empty text).

    Short texts can exceed 1.0 (zlib's header costs more than it saves).
    """
    if not isinstance(text, str) or not text:
        return 1.0
    raw = text.encode("utf-8", "surrogatepass")
    return len(zlib.compress(raw, 6)) / len(raw)


def _word_hashes(text: str) -> list[int]:
    return [zlib.crc32(w.encode("utf-8", "surrogatepass")) + 1 for w in _WORD.findall(text.lower())]


def shingles(text: str) -> set[int]:
    """The hashed word shingles of a text (empty for a text without words)."""
    if not isinstance(text, str):
        return set()
    words = _word_hashes(text)
    n = len(words)
    if n == 0:
        return set()
    if n < SHINGLE_WORDS:
        h = 0
        for w in words:
            h = (h * _BASE + w) % _MOD
        return {h}
    out: set[int] = set()
    h = 0
    for i, w in enumerate(words):
        h = (h * _BASE + w) % _MOD
        if i >= SHINGLE_WORDS:
            h = (h - words[i - SHINGLE_WORDS] * _BASE_POW) % _MOD
        if i >= SHINGLE_WORDS - 1:
            out.add(h)
    return out


class NoveltyIndex:
    """Shingle hashes of everything added so far; `novelty` says how much of a text is new."""

    __slots__ = ("_seen",)

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self._seen: set[int] = set()
        for text in texts:
            self.add(text)

    def __len__(self) -> int:
        return len(self._seen)

    def add(self, text: str) -> None:
        """Index a text's shingles."""
        self._seen.update(shingles(text))

    def novelty(self, text: str) -> float:
        """Share of the text's distinct shingles not indexed yet, in [0, 1]."""
        mine = shingles(text)
        if not mine:
            return 0.0
        return len(mine - self._seen) / len(mine)

    def observe(self, text: str) -> float:
        """The text's novelty against what came before, then index it (one pass per message)."""
        mine = shingles(text)
        if not mine:
            return 0.0
        new = len(mine - self._seen)
        self._seen.update(mine)
        return new / len(mine)


def incremental_novelty(texts: Iterable[str]) -> list[float]:
    """Each text's novelty against all the texts before it, in order."""
    index = NoveltyIndex()
    return [index.observe(t) for t in texts]
