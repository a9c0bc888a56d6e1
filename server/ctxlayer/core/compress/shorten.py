"""Shortening one message's text to a token cap without losing what it names.

Owns ``shorten``: the tool-output compression (a JSON outline, a log's errors, else head and
tail) plus one line naming the errors, tests, paths and lines of the part that was cut, within a
share of the cap (the text is cut shorter to make room for it). A shortened traceback or
listing still says which exception, test or file it held, so a later step can find them.
Pure: the counter is injected.
"""

from __future__ import annotations

import msgspec

from ctxlayer.core.compress.facts import named_facts
from ctxlayer.core.compress.ledger import facts_cut
from ctxlayer.core.compress.tool_output import CompressedOutput, Counter, compress_tool_output
from ctxlayer.core.tokens import OPENAI_FORMAT, MessageFormat, Tokenizer, message_tokens
from ctxlayer.protocol import Message

__all__ = ["NOTE_MIN", "NOTE_SHARE", "shorten", "shorten_message"]

#: the line naming the cut part's facts takes at most this share of the cap, and is written
#: only when the cap is at least NOTE_MIN tokens (below, the head and tail say more than a list)
NOTE_SHARE = 0.3
NOTE_MIN = 48


def shorten(text: str, cap: int, counter: Counter) -> CompressedOutput | None:
    """``text`` within ``cap`` tokens, None when it fits already."""
    short = compress_tool_output(text, max(1, cap), counter)
    if short is None or cap < NOTE_MIN:
        return short
    chars_per_token = max(1.0, len(short.text) / max(1, short.tokens_after))
    named = named_facts(text)  # read once for both notes
    note = facts_cut(text, short.text, int(cap * NOTE_SHARE * chars_per_token), named)
    if not note:
        return short
    room = cap - counter.count(note) - 1
    again = compress_tool_output(text, max(1, room), counter) if room >= NOTE_MIN // 2 else None
    if again is None:
        return short
    note = facts_cut(text, again.text, len(note), named)
    out = again.text + "\n" + note if note else again.text
    after = counter.count(out)
    if after > cap:  # a token more where the two join: the outline alone, as before
        return short
    return CompressedOutput(out, again.method, short.tokens_before, after)


def shorten_message(m: Message, tokens: int, cap: int, counter: Tokenizer,
                    fmt: MessageFormat = OPENAI_FORMAT) -> tuple[Message, int] | None:
    """Message ``m`` (``tokens`` as counted whole) with its text shortened so the message
    takes about ``cap`` tokens (its overheads left as they are), and its new count; None when
    that makes it no shorter."""
    overhead = tokens - counter.count(m.content)
    short = shorten(m.content, max(1, cap - overhead), counter)
    if short is None:
        return None
    new = msgspec.structs.replace(m, content=short.text)
    after = message_tokens(new, counter, fmt)
    return (new, after) if after < tokens else None
