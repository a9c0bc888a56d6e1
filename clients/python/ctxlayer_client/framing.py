"""JSON-RPC 2.0 messages with LSP framing (`Content-Length` headers), both directions.

Owns: encoding a message to bytes and reading one framed message from an asyncio
StreamReader. Nothing else: no ids, no dispatch.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

_encoder = msgspec.json.Encoder()


class FramingError(Exception):
    """The peer sent bytes that are not an LSP-framed JSON message."""


def encode(message: Any) -> bytes:
    body = _encoder.encode(message)
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_message(reader: asyncio.StreamReader) -> Any | None:
    """The next message, or None at end of stream."""
    length: int | None = None
    while True:
        line = await reader.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            if length is not None:
                break
            continue
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise FramingError(f"bad Content-Length: {value[:40]!r}") from None
    try:
        body = await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        return None
    try:
        return msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise FramingError(f"invalid JSON from the daemon: {exc}") from None
