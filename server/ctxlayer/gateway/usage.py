"""What the provider says it used: token usage read from an answer as it passes through.

Owns: `Usage` and the readers of both providers' shapes: a whole JSON answer
(`from_answer`), or an SSE stream watched chunk by chunk (`StreamUsage.feed`), without
holding the stream (only an unfinished event is kept between chunks). Pure: no I/O.

OpenAI: `usage.prompt_tokens` (cache reads included, in
`prompt_tokens_details.cached_tokens`), `completion_tokens`; streamed only in the last chunk
when the client set `stream_options.include_usage`. Anthropic: `input_tokens` excludes the
cache, so the prompt is `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`;
streamed in message_start (input) and message_delta (output, sometimes input again).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec


class Usage(msgspec.Struct, kw_only=True):
    """One answer's tokens as the provider counted them."""

    prompt_tokens: int  # the whole input, cached parts included
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class _Fields:
    """The usage numbers seen so far; a later report of a number replaces the earlier one."""

    def __init__(self) -> None:
        self.seen = False
        self.values: dict[str, int] = {}

    def take(self, fmt: str, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        self.seen = True
        if fmt == "anthropic":
            keys = ("input_tokens", "output_tokens", "cache_read_input_tokens",
                    "cache_creation_input_tokens")
            for key in keys:
                if key in usage and usage[key] is not None:
                    self.values[key] = _int(usage[key])
            return
        for key in ("prompt_tokens", "completion_tokens"):
            if key in usage:
                self.values[key] = _int(usage[key])
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict) and "cached_tokens" in details:
            self.values["cached_tokens"] = _int(details["cached_tokens"])

    def usage(self, fmt: str) -> Usage | None:
        if not self.seen:
            return None
        v = self.values
        if fmt == "anthropic":
            read, write = v.get("cache_read_input_tokens", 0), v.get(
                "cache_creation_input_tokens", 0)
            return Usage(prompt_tokens=v.get("input_tokens", 0) + read + write,
                         completion_tokens=v.get("output_tokens", 0),
                         cache_read_tokens=read, cache_write_tokens=write)
        return Usage(prompt_tokens=v.get("prompt_tokens", 0),
                     completion_tokens=v.get("completion_tokens", 0),
                     cache_read_tokens=v.get("cached_tokens", 0))


def from_answer(fmt: str, body: bytes) -> Usage | None:
    """The usage of a whole (non-streamed) JSON answer, or None when it has none."""
    try:
        answer = json.loads(body)
    except ValueError:
        return None
    fields = _Fields()
    if isinstance(answer, dict):
        fields.take(fmt, answer.get("usage"))
    return fields.usage(fmt)


class StreamUsage:
    """Reads the usage out of an SSE stream fed chunk by chunk, as the chunks pass."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self._fields = _Fields()
        self._tail = b""

    def feed(self, chunk: bytes) -> None:
        data = self._tail + chunk
        events = data.replace(b"\r\n", b"\n").split(b"\n\n")
        self._tail = events.pop()  # an unfinished event waits for the next chunk
        for event in events:
            if b"usage" in event:  # most events are content deltas: skip them unparsed
                self._event(event)

    def _event(self, event: bytes) -> None:
        lines = [line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:")]
        try:
            payload = json.loads(b"\n".join(lines))
        except ValueError:
            return
        if not isinstance(payload, dict):
            return
        if self.fmt == "anthropic":
            if payload.get("type") == "message_start":
                message = payload.get("message")
                self._fields.take(self.fmt, message.get("usage") if isinstance(
                    message, dict) else None)
            elif payload.get("type") == "message_delta":
                self._fields.take(self.fmt, payload.get("usage"))
            return
        self._fields.take(self.fmt, payload.get("usage"))

    def usage(self) -> Usage | None:
        """The usage reported so far (None when the stream carried none)."""
        if self._tail.strip():
            self.feed(b"\n\n")
        return self._fields.usage(self.fmt)
