"""A provider request as a live conversation sees it: decoded for the engine, encoded back,
known by its first messages, and the output room the client asked for.

Decoding and encoding are the format codecs' (`ctxlayer.core.formats`); until they are part
of the build, the ctxlayer format is served here (decode validates, encode writes the kept
messages back) and the provider formats are refused naming the field.
Must not: decide what is kept (the engine does).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError

try:  # the provider codecs
    from ctxlayer.core import formats as _formats  # type: ignore[attr-defined]
except ImportError:  # not in this build yet
    _formats = None


class _Decoded:
    def __init__(self, payload: dict, messages: list[protocol.Message]) -> None:
        self.payload, self.messages = payload, messages


class _Encoded:
    def __init__(self, payload: dict) -> None:
        self.payload = payload
        self.audit: list[protocol.AuditEntry] = []
        self.breakpoints: list[int] = []


def decode(fmt: str, request: dict, counter: Any) -> Any:
    """The request's conversation for the engine (`.messages`), naming a bad field."""
    if _formats is not None:
        try:
            return _formats.decode(fmt, request, counter)  # type: ignore[arg-type]
        except ContextError as err:  # the codec names fields of the payload: it is `request`
            if err.field and err.field != "format" and not err.field.startswith("request"):
                raise ContextError(err.kind, f"request.{err}", field=f"request.{err.field}"
                                   ) from None
            raise
    if fmt != "ctxlayer":
        raise ContextError("invalid", f"format {fmt!r} is not served by this build",
                           field="format")
    raw = request.get("messages")
    if not isinstance(raw, list):
        raise ContextError("invalid", "expected a list of messages", field="request.messages")
    messages = _ctxlayer_messages(raw)
    ids: dict[str, int] = {}
    out = []
    for i, m in enumerate(messages):
        if m.id is None:  # the engine needs ids; made up ones never go back to the client
            m = msgspec.structs.replace(m, id=f"ctx:in:{i}")
        elif m.id in ids:
            raise ContextError("invalid", f"the same id as messages[{ids[m.id]}]",
                               field=f"request.messages[{i}].id")
        ids[m.id] = i  # type: ignore[index]
        out.append(m)
    return _Decoded(request, out)


def _ctxlayer_messages(raw: list) -> list[protocol.Message]:
    """Strict ctxlayer Messages: an unknown or missing field is an error naming it."""
    try:
        return msgspec.convert(raw, list[protocol.Message])
    except msgspec.ValidationError as exc:
        text, _, where = str(exc).partition(" - at `$")
        where = "request.messages" + where.rstrip("`")
        for start in ("Object contains unknown field `", "Object missing required field `"):
            if text.startswith(start):
                where += "." + text.split("`")[1]
        raise ContextError("invalid", text, field=where) from None


def encode(decoded: Any, kept: list[protocol.Message], breakpoints: list[int]) -> Any:
    """The request with its conversation replaced by ``kept`` (`.payload`, `.audit`,
    `.breakpoints`)."""
    if _formats is not None:
        return _formats.encode(decoded, kept, cache_breakpoints=breakpoints)
    out = [msgspec.structs.replace(m, id=None) if m.id and m.id.startswith("ctx:in:") else m
           for m in kept]
    encoded = _Encoded({**decoded.payload, "messages": msgspec.to_builtins(out)})
    encoded.breakpoints = list(breakpoints)  # no cache markers in this format: where to put them
    return encoded


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content
                         if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def identity_text(fmt: str, request: dict) -> str:
    """What names a conversation without an id: its system text and first user message, text
    only, so markers a client moves between turns (cache_control) do not change it."""
    parts = [f"{fmt}\x00{_text(request.get('system'))}"]
    messages = request.get("messages")
    for m in messages if isinstance(messages, list) else ():
        if not isinstance(m, dict):
            break
        role = m.get("role")
        parts.append(f"{role}\x00{_text(m.get('content'))}")
        if role == "user":
            break
    return "\x01".join(parts)


def client_reserve(request: dict) -> int | None:
    """The output room the request itself asks for (`max_completion_tokens`, `max_tokens`)."""
    for key in ("max_completion_tokens", "max_tokens"):
        value = request.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
