"""Messages in, in the request's format: ctxlayer's Message, or a provider's own objects.

Owns the step every method that takes messages shares: validate and decode them for the engine
(naming the bad field), and read the files attached to them inside the workspace only.
Must not: trim or count (the callers do).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import msgspec

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.state.caller import Caller


def ctxlayer_messages(raw: Any, field: str = "messages") -> list[protocol.Message]:
    """Strict ctxlayer Messages: an unknown field is an error naming it."""
    if raw and isinstance(raw[0], protocol.Message):
        return list(raw)
    try:
        return msgspec.convert(raw, list[protocol.Message])
    except msgspec.ValidationError as exc:
        text = str(exc)
        where = ""
        if " - at `$" in text:
            text, where = text.rsplit(" - at `$", 1)
            where = where.rstrip("`")
        if text.startswith("Object contains unknown field `"):
            name = text.split("`")[1]
            where, text = f"{where}.{name}", "unknown field"
        elif text.startswith("Object missing required field `"):
            name = text.split("`")[1]
            where, text = f"{where}.{name}", "required field is missing"
        raise ContextError("invalid", text, field=field + where) from None


async def attachments(caller: Caller, messages: list[protocol.Message]) -> dict[str, str]:
    """The files attached to messages, read inside the workspace only (-32003 otherwise)."""
    from ctxlayer.workspace.attachments import attached_paths, read_attachments

    attached = attached_paths(messages)
    if not attached:
        return {}
    root = caller.root if caller.root is not None else Path.cwd()
    return await asyncio.to_thread(read_attachments, root, attached)


def require_format(fmt: str, method: str) -> None:
    if fmt not in ("ctxlayer", "openai", "anthropic"):
        raise ContextError("invalid", f"unknown format {fmt!r} for {method}", field="format")


class Decoded:
    """Messages decoded for the engine, and what is needed to give them back in their format."""

    def __init__(self, fmt: str, messages: list[protocol.Message], native: Any = None) -> None:
        self.fmt, self.messages, self.native = fmt, messages, native


class Encoded:
    def __init__(self, messages: list[Any], system: Any = None,
                 audit: list[protocol.AuditEntry] | None = None) -> None:
        self.messages, self.system, self.audit = messages, system, audit or []


def decode(fmt: str, raw: Any, system: Any, counter: Any) -> Decoded:
    """The request's messages for the engine (ctxlayer format: validated strictly)."""
    require_format(fmt, "messages")
    if fmt == "ctxlayer":
        if system is not None:
            raise ContextError("invalid", "only the anthropic format has a separate system",
                               field="system")
        return Decoded(fmt, ctxlayer_messages(raw))
    raise ContextError("invalid", f"format {fmt!r} is not served by this build", field="format")


def encode(decoded: Decoded, kept: list[protocol.Message]) -> Encoded:
    """The kept messages in the request's format."""
    if decoded.fmt == "ctxlayer":
        return Encoded(list(kept))
    raise ContextError("invalid", f"format {decoded.fmt!r} is not served by this build",
                       field="format")
