"""Compressing a cooled working item to about a quarter, structured facts kept.

The short form is the item's facts ledger (error codes, line numbers, tests, paths, commands,
module and function names, key=value settings, numbers) followed by an extractive compression
of its prose, together about ``ratio`` of the original. The facts come first and are kept
whole: a summary that loses the line number is worse than none, and a path cut mid-name
(`migrations/0007_add_inde…`) points at no file. The prose is what gets cut, and only between
words; text with no spaces to cut at (Chinese or Japanese prose, a JSON blob) is cut between
characters, but never inside a run of ASCII name characters (a path, a name, a number). When the
facts alone are over the size, whole facts are left out (the ledger says how many), never cut;
the item's full text comes back when a reply refers to it. The short form always keeps some of
the text: when nothing shorter does (one long word), it is the text itself, and the caller
keeps the item whole.
Must not: count tokens (sizes are in characters) or call a model.
"""

from __future__ import annotations

import re

from ctxlayer.core.compress.extractive import compress_prose
from ctxlayer.core.compress.facts import Facts, extract_facts, format_ledger

RATIO = 0.25
#: prose shorter than this after the facts is a stub, not a summary: leave it out
MIN_PROSE = 40
#: the characters of a path, a name or a number: a cut between characters never falls inside a
#: run of them, which may be the path the note is about
_NAME_RUN = re.compile(r"[A-Za-z0-9_./\\:-]+")


def compress_item(text: str, ratio: float = RATIO) -> str:
    """The item's short form: the facts ledger, whole facts only, then the prose cut between
    words to fill about ``ratio`` of the text."""
    target = max(80, int(len(text) * ratio))
    # the facts may take the whole size: they are what the short form is for
    ledger = format_ledger(spelled_once(extract_facts(text)), target, item_max=target)
    room = target - len(ledger) - 1
    if room < MIN_PROSE:
        return ledger.strip()
    prose = compress_prose(text, max(0.05, room / max(1, len(text))), ()).strip()
    # a text that is one long sentence said again and again has no best sentence that fits:
    # its own head is the short form then, not nothing
    short = (ledger.strip() + "\n" + cut_between_words(prose or text.strip(), room)).strip()
    return short or text


def spelled_once(facts: Facts) -> Facts:
    """The facts without those another one spells out (the test a command runs, the path of a
    `path:line`, a name that is also a test): a short form has no room to say a thing twice."""
    kinds = facts.__struct_fields__
    seen: set[str] = set()
    firsts: dict[str, list[str]] = {}
    for kind in kinds:  # a value found as two kinds is kept as the first
        firsts[kind] = [v for v in getattr(facts, kind) if not (v in seen or seen.add(v))]
    # every value once, apart: a value found twice is also part of another one
    joined = "\0".join(seen)
    return Facts(**{kind: tuple(v for v in firsts[kind] if joined.count(v) == 1)
                    for kind in kinds})


def cut_between_words(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut at the last space before it (a "…" says it
    was cut), never inside a word: a cut word may be a path or a name. A head with no space
    (Chinese prose has none, nor has minified JSON) is cut at the last character that fits
    outside a run of name characters; "" when the cut could only fall inside the first word."""
    if len(text) <= limit:
        return text
    head = text[:limit]  # the "…" takes the place of the space the cut falls on
    space = max(head.rfind(" "), head.rfind("\n"))
    if space > 0:
        return head[:space].rstrip() + "…"
    head = cut_between_characters(text, limit - 1).rstrip()
    return head + "…" if head else ""


def cut_between_characters(text: str, limit: int) -> str:
    """The head of ``text`` within ``limit`` characters; a cut that would fall inside a run of
    name characters falls before the run instead."""
    end = max(0, limit)
    if 0 < end < len(text) and _is_name(text[end - 1]) and _is_name(text[end]):
        end = max((m.start() for m in _NAME_RUN.finditer(text, 0, end)), default=0)
    return text[:end]


def _is_name(char: str) -> bool:
    return _NAME_RUN.fullmatch(char) is not None
