"""Compressing a cooled working item to about a quarter, structured facts kept.

The short form is the item's facts ledger (error codes, line numbers, paths, module and
function names, parameter and return types, numbers) followed by an extractive compression of
its prose, together about ``ratio`` of the original. The facts come first: a summary that
loses the line number is worse than none.
Must not: count tokens (sizes are in characters) or call a model.
"""

from __future__ import annotations

from ctxlayer.core.compress.extractive import compress_prose
from ctxlayer.core.compress.facts import extract_facts, format_ledger

RATIO = 0.25


def compress_item(text: str, ratio: float = RATIO) -> str:
    """The item's short form: facts ledger, then the prose cut to fill about ``ratio``."""
    target = max(80, int(len(text) * ratio))
    ledger = format_ledger(extract_facts(text), max(40, target // 2))
    room = max(0, target - len(ledger))
    prose = compress_prose(text, max(0.05, room / max(1, len(text))), ())
    prose = prose if len(prose) <= room + 80 else prose[:room] + "…"
    return (ledger.strip() + "\n" + prose.strip()).strip()
