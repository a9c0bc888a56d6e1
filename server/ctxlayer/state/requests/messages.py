"""Messages in, in the request's format: ctxlayer's Message, or a provider's own objects.

Owns the step every method that takes messages shares: validate and decode them for the engine
(naming the bad field), and read the files attached to them inside the workspace only.
Must not: trim or count (the callers do).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.state.caller import Caller


def attachments(caller: Caller, messages: list[protocol.Message]) -> dict[str, str]:
    """The files attached to messages, read inside the workspace only (-32003 otherwise);
    blocking (the files), so from a worker thread."""
    from ctxlayer.workspace.attachments import attached_paths, read_attachments

    attached = attached_paths(messages)
    if not attached:
        return {}
    root = caller.root if caller.root is not None else Path.cwd()
    return read_attachments(root, attached)


def require_format(fmt: str, method: str) -> Any:
    """The codec of `fmt` (the core's table), or an error naming the `format` field."""
    from ctxlayer.core.formats import CODECS

    if fmt not in CODECS:
        raise ContextError("invalid", f"unknown format {fmt!r} for {method}", field="format")
    return CODECS[fmt]


def decode(fmt: str, raw: Any, system: Any, counter: Any, *, at: str = "",
           whole: bool = False, model: str | None = None) -> Any:
    """The request's messages for the engine, by the format's codec (`.messages`); `system`
    goes where the format keeps it (anthropic `system`, responses `instructions`). `whole`:
    also those before a provider's compaction block (a session's history). `model`: the
    model they are counted for, whose rules read them (Claude's images)."""
    codec = require_format(fmt, "messages")
    if system is not None and codec.system is None:
        raise ContextError("invalid", f"the {fmt} format has no separate system",
                           field="system")
    payload: dict = {codec.conversation: raw if raw is not None else []}
    if system is not None:
        payload[codec.system] = system
    from ctxlayer.state.chatcodec import decode_payload

    return decode_payload(fmt, payload, counter, at=at, whole=whole, model=model)


def encode(decoded: Any, kept: list[protocol.Message]) -> Any:
    """The kept messages in the request's format (`.payload["messages"]`, `["system"]`)."""
    from ctxlayer.core import formats

    return formats.encode(decoded, kept)


def unwrap(fmt: str, payload: dict) -> tuple[Any, Any]:
    """(the messages, the system) of an encoded payload, wherever its format keeps them; a
    string conversation (responses `input`) as the one message it is."""
    codec = require_format(fmt, "messages")
    messages = payload.get(codec.conversation)
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    return messages or [], payload.get(codec.system) if codec.system else None
