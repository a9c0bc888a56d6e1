"""What a session's messages cost as one format carries them to one model, at assembly time.

A session counts each message's non-text parts (images, documents, thinking) once, when it is
appended. What the provider reads of them is decided later, by the request they go out in:
- the model (Claude's images cost more than OpenAI's; which thinking is read again depends on
  the model, which ctx/session/configure may change);
- the turn (the thinking of the turn under way is read again whole on models that keep only
  the last turn's; once the user writes again, only its text is read);
- the format (a message written into another format carries only its text, tool calls and
  user images: its thinking, documents and audio are not sent; into the `ctxlayer` format,
  only its text and tool calls: the parts are named in the audit, and counted nowhere).
So the history is priced again for each assembly, by the target format's own decoder reading
the messages as they would go out (`stored.rebuild`'s natives), and for a session's budget as
each message's own format carries it (`as_stored`). A message with no provider form keeps the
figures its client gave.

Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ctxlayer.core.formats.stored import PROVIDER_FORMATS, Builder, Stored, add_stored
from ctxlayer.protocol import Message


def as_sent(fmt: str, model: str | None, messages: list[Message],
            stored: list[Stored | None], counter: Any) -> list[Message]:
    """`messages` (a session's history, in order, or its end from a user's question on: see
    `settled`) with the parts each carries when written in `fmt` for `model`. A message stored
    in `fmt` is priced as the provider reads it there (its turn's thinking whole, an earlier
    turn's by its text where the model drops it); one stored in another format with its
    images only (user messages), else with none. The same objects where nothing changed."""
    from ctxlayer.core import formats

    if fmt == "ctxlayer":  # text and tool calls only: a stored message's parts stay behind
        return [m if s is None else _with_parts(m, None, None)
                for m, s in zip(messages, stored, strict=True)]
    if fmt not in PROVIDER_FORMATS:
        return as_stored(model, messages, stored, counter)
    b, read_from = _natives(fmt, messages, stored)
    if not read_from:
        return messages
    where = formats.codec(fmt).conversation
    fresh = formats.decode(fmt, {where: b.natives}, counter, whole=True,  # type: ignore[arg-type]
                           model=model)
    read = {_where(src): m for src, m in zip(fresh.sources, fresh.messages, strict=True)}
    out = list(messages)
    for k, key in read_from.items():
        m = messages[k]
        # written from its text (no form in `fmt`): none of its parts go; else as read, or
        # its own figures where the decoder split the message otherwise (a document)
        found = read.get(_where(b.sources[b.index[key]]), m) if key else None
        out[k] = _with_parts(m, found.parts_tokens if found else None,
                             found.parts if found else None)
    return out


def as_stored(model: str | None, messages: list[Message], stored: list[Stored | None],
              counter: Any) -> list[Message]:
    """As `as_sent`, each message with the parts it carries in the format it was appended in:
    what a session's budget counts (a ctxlayer assembly sends these figures as they are)."""
    out = messages
    for fmt in dict.fromkeys(s.raw.get("format") for s in stored if s is not None):
        if fmt not in PROVIDER_FORMATS:
            continue
        # each message is read with the others of the session (its turn), priced in its own
        # format only
        mine = [s if s is not None and s.raw.get("format") == fmt else None for s in stored]
        priced = as_sent(fmt, model, messages, mine, counter)
        out = [p if s is not None else o for o, p, s in zip(out, priced, mine, strict=True)]
    return out


def settled(messages: list[Message]) -> int:
    """How many leading messages keep their price whatever comes after them: those before the
    last user's question (a user message that is no tool result). Every rule of what the
    provider reads again looks at the turn a message is in, and a turn before that one is
    over; so a new turn prices the messages from there on only, read from that question on
    as in the whole history (the same turns)."""
    for k in range(len(messages) - 1, -1, -1):
        m = messages[k]
        if m.role == "user" and m.tool_call_id is None:
            return k
    return 0


def _natives(fmt: str, messages: list[Message], stored: list[Stored | None]
             ) -> tuple[Builder, dict[int, str | None]]:
    """The history as `fmt` writes it (stored.rebuild's natives), with a user's question that
    has no form in `fmt` written as plain text, so that the decoder finds the turn where the
    request will have it; {history position: its key among them, None for a stored message
    written from its text} of the stored messages."""
    b = Builder(fmt)
    read_from: dict[int, str | None] = {}
    for k, (m, s) in enumerate(zip(messages, stored, strict=True)):
        key = f"ctx:priced:{k}"
        if add_stored(b, key, s, fmt) is None:
            if m.role == "user" and m.tool_call_id is None:  # placed, never priced
                b.single(key, {"role": "user", "content": m.content}, m)
            if s is not None:
                read_from[k] = None
            continue
        read_from[k] = key
    return b, read_from


def _where(source: Any) -> Any:
    """A decoder's source key in one shape, hashable: an Anthropic string content's blocks
    are None to the decoder and () to the rebuild; a Responses message's items a list."""
    if isinstance(source, list):
        return tuple(source)
    if isinstance(source, tuple) and len(source) == 3 and source[2] is None:
        return (*source[:2], ())
    return source


def _with_parts(m: Message, tokens: int | None, labels: list[str] | None) -> Message:
    if (m.parts_tokens or None) == (tokens or None) and (m.parts or None) == (labels or None):
        return m
    return msgspec.structs.replace(m, parts_tokens=tokens or None, parts=labels or None)
