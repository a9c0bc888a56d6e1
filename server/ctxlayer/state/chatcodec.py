"""A provider request as a live conversation sees it: decoded for the engine, encoded back,
known by its first messages, the output room the client asked for, and whether it can be
fitted at all.

Decoding and encoding are the format codecs' (`ctxlayer.core.formats`, looked up in its table,
never by a format's name); this module names a bad field from the request's root
(`request.messages[1].colour`).
Must not: decide what is kept (the engine does).
"""

from __future__ import annotations

from typing import Any

from ctxlayer import protocol
from ctxlayer.core import formats
from ctxlayer.core.errors import ContextError


def decode_payload(fmt: str, payload: dict, counter: Any, *, at: str = "",
                   previous: Any = None, whole: bool = False, model: str | None = None
                   ) -> Any:
    """A payload decoded by its codec; a field the codec cannot read is named from the params'
    root (`at` = "request": `request.messages[1].colour`). ``previous``, the decode of the
    same chat's last turn, lets the messages it shares be taken over, not read again;
    ``model``, one named outside the payload, reads it (formats.decode)."""
    try:
        return formats.decode(fmt, payload, counter, previous=previous,  # type: ignore[arg-type]
                              whole=whole, model=model)
    except ContextError as err:
        raise _from_root(err, at) from None


def _from_root(err: ContextError, at: str) -> ContextError:
    """``err``, its field named from the params' root (`messages` -> `request.messages`) where
    the codec named it from the request's."""
    if at and err.field and err.field != "format" and not err.field.startswith(at):
        return ContextError(err.kind, f"{at}.{err}", field=f"{at}.{err.field}")
    return err


def decode(fmt: str, request: dict, counter: Any, previous: Any = None,
           model: str | None = None) -> Any:
    """The request's conversation for the engine (`.messages`), naming a bad field, read by
    ``model`` (the one the request is prepared for) where given."""
    return decode_payload(fmt, request, counter, at="request", previous=previous, model=model)


def encode(decoded: Any, kept: list[protocol.Message], breakpoints: list[int]) -> Any:
    """The request with its conversation replaced by ``kept`` (`.payload`, `.audit`,
    `.breakpoints`). What it refuses (an Anthropic request with assistant turns only) is named
    from the params' root, as a decode's is."""
    try:
        return formats.encode(decoded, kept, cache_breakpoints=breakpoints)
    except ContextError as err:
        raise _from_root(err, "request") from None


def text_of(content: Any) -> str:
    """A message content's text: the string, or its text blocks' (`text`, `input_text`)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content
                         if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def identity_text(fmt: str, request: dict) -> str:
    """What names a conversation without an id: its system text and first message after it
    (its first user message; a history a client's compaction wrote may open with the
    assistant's summary, and the name must not change as that history grows), text only, so
    markers a client moves between turns (cache_control) do not change it."""
    own = formats.codec(fmt).identity
    if own is not None:
        return "\x01".join([fmt, *own(request)])
    parts = [f"{fmt}\x00{text_of(request.get('system'))}"]
    messages = request.get("messages")
    for m in messages if isinstance(messages, list) else ():
        if not isinstance(m, dict):
            break
        role = m.get("role")
        parts.append(f"{role}\x00{text_of(m.get('content'))}")
        if role not in ("system", "developer"):
            break
    return "\x01".join(parts)


def conversation_of(fmt: str, request: dict) -> list:
    """The request's conversation as the client sent it (a string `input` is one message)."""
    value = request.get(formats.codec(fmt).conversation)
    if isinstance(value, str):
        return [value]
    return value if isinstance(value, list) else []


def conversation_field(fmt: str) -> str:
    """Where the request keeps its conversation, from the params' root (`request.input`)."""
    return f"request.{formats.codec(fmt).conversation}"


def nothing_to_fit(fmt: str, request: dict) -> str | None:
    """Why a request that holds no message (no conversation, no system prompt) goes as it
    came, in a format where that is a request (a Responses one whose prompt is the
    provider's); None when it holds one, or its format needs one."""
    codec = formats.codec(fmt)
    if codec.empty is None or conversation_of(fmt, request) or \
            formats.other_format(fmt, request) is not None:  # refused by the decoding
        return None
    return codec.empty if codec.system is None or request.get(codec.system) is None else None


def unfittable(fmt: str, request: dict) -> str | None:
    """Why this request must go as it came (its history kept by the provider), else None."""
    return formats.codec(fmt).unfittable(request)


def client_reserve(request: dict, fmt: str = "openai") -> int | None:
    """The output room the request itself asks for (`max_completion_tokens`, `max_tokens`;
    `max_output_tokens` for responses)."""
    found = reserve_field(request, fmt)
    return found[1] if found is not None else None


def no_room(reserve: int, window: int, model: str | None) -> str:
    """Why an output reserve is refused: it leaves the prompt nothing."""
    return f"{reserve:,} tokens of output leave no room for the prompt in the {window:,}-token " \
        f"window of {model or 'the default model'}"


def reserve_field(request: dict, fmt: str = "openai") -> tuple[str, int] | None:
    """(the key, the output room) the request itself asks for, the first key its format
    reads that holds a positive number."""
    for key in formats.codec(fmt).reserve:
        value = request.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return key, value
    return None
