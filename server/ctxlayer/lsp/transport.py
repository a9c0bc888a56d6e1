"""JSON-RPC framing and envelope checks, in front of pygls' protocol.

Owns: reading `Content-Length` framed messages from an asyncio StreamReader (stdio or TCP),
surviving every malformed input, and answering it: a bad or missing Content-Length, garbage
header lines, a header line over 64 KiB, a body over `max_message_bytes` (streamed away, never
held), invalid JSON or UTF-8, a batch, a non-object, a wrong `jsonrpc`/`id`/`method`/`params`,
params pygls cannot structure, requests after `shutdown`. Errors carry the request's id when
it can be recovered (also from an unparsable or oversized body: a top-level `"id"` in its first
64 KiB), else null. After garbage, reading resynchronizes on the next `Content-Length:`.

pygls' own loop (pygls.io_.run_async) drops these silently (the client waits forever), reads a
declared length in full before checking it, and reads stdin through a thread per line; this
module replaces it and hands well-formed messages to `protocol.handle_message`.

Must not: know about ctxlayer's methods (auth is a callback).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import Any

import cattrs
import msgspec
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ctxlayer.core.errors import lone_surrogate, not_utf8
from ctxlayer.lsp import errors
from ctxlayer.lsp.overrides import shut_down
from ctxlayer.protocol import MAX_MESSAGE_MB

log = logging.getLogger(__name__)

#: Largest body accepted (protocol.py's limit, which the gateway's `max_body_mb` shares).
MAX_MESSAGE_BYTES = MAX_MESSAGE_MB * 1024 * 1024
#: Longest header line; StreamReaders must be created with this limit.
LINE_LIMIT = 64 * 1024
_CHUNK = 1024 * 1024
_ID_VALUE = re.compile(rb'\s*:\s*(-?\d{1,18}(?![\d.eE])|"(?:[^"\\]|\\.){0,200}")')

#: auth(message) -> None when accepted, else the reason it was refused
Authenticator = Callable[[dict], "str | None"]


class Closed(Exception):
    """The peer closed the stream."""


def sniff_id(body: bytes) -> int | str | None:
    """The top-level `"id"` of a (possibly broken or truncated) JSON object, if findable."""
    depth, i, n = 0, 0, min(len(body), LINE_LIMIT)
    while i < n:
        c = body[i]
        if c == 0x22:  # a string: skip it, and check whether it is the key "id" at depth 1
            j = i + 1
            while j < n and body[j] != 0x22:
                j += 2 if body[j] == 0x5C else 1
            if depth == 1 and body[i + 1:j] == b"id":
                m = _ID_VALUE.match(body, j + 1)
                if m:
                    raw = m.group(1)
                    try:
                        value = msgspec.json.decode(raw)
                    except msgspec.DecodeError:
                        return None
                    return value if isinstance(value, int | str) else None
            i = j + 1
            continue
        if c in b"{[":
            depth += 1
        elif c in b"}]":
            depth -= 1
        i += 1
    return None


def _valid_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, str) or (isinstance(value, int) and -(2**53) <= value <= 2**53)


class Connection:
    """Feeds one CtxServer from one byte stream until EOF or `exit`."""

    def __init__(
        self,
        server: Any,
        reader: asyncio.StreamReader,
        writer: Any,
        *,
        authenticate: Authenticator | None = None,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self.server = server
        self.protocol = server.protocol
        self.reader = reader
        self.writer = writer
        self.authenticate = authenticate
        self.max_message_bytes = max_message_bytes
        self.protocol.set_writer(writer)
        self.rejected = False

    # -- sending -----------------------------------------------------------------------------

    def send_error(self, msg_id: int | str | None, code: int, message: str,
                   data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        body = msgspec.json.encode({"jsonrpc": "2.0", "id": msg_id, "error": error})
        try:
            self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        except Exception:
            log.exception("could not send an error response")

    # -- reading -----------------------------------------------------------------------------

    async def run(self) -> None:
        """Read and dispatch until the peer closes, the server ends, or auth fails."""
        try:
            while not getattr(self.server, "_ended", False) and not self.rejected:
                body = await self.read_frame()
                if body is not None:
                    try:
                        self.dispatch(body)
                    except Exception:  # the loop must survive anything a message does
                        log.exception("dispatching a message failed")
                    # Reading a buffered frame does not suspend: without this, a client that
                    # pipelined hundreds of requests would have them all dispatched before
                    # another client's one request is even read.
                    await asyncio.sleep(0)
        except Closed:
            pass
        except (ConnectionError, OSError) as exc:
            log.info("connection lost: %s", exc)

    async def _line(self) -> bytes:
        try:
            line = await self.reader.readline()
        except ValueError:  # longer than LINE_LIMIT: readline has discarded it
            return b"\x00overlong"
        if not line:
            raise Closed
        return line

    async def read_frame(self) -> bytes | None:
        """One message body, or None when the frame was malformed (already answered)."""
        length: int | None = None
        problem: str | None = None
        seen = False
        while True:
            line = await self._line()
            text = line.strip()
            if not text:
                if seen:
                    break
                continue  # stray blank lines between messages
            seen = True
            at = text.lower().find(b"content-length:")
            if at > 0:  # the tail of a broken message, then a header: resynchronize
                log.debug("discarding %d bytes of garbage before a header", at)
                text = text[at:]
            if at >= 0:
                value = text[15:].strip()
                if value.isdigit() and len(value) <= 15:
                    length = int(value)
                else:
                    problem = f"invalid Content-Length {value[:40].decode('latin-1')!r}"
            elif text == b"\x00overlong":
                problem = f"a header line longer than {LINE_LIMIT} bytes"
            elif b":" not in text:
                problem = f"a malformed header line {text[:40].decode('latin-1')!r}"
        if length is None:
            self.send_error(None, errors.PARSE_ERROR,
                            f"malformed framing: {problem or 'no Content-Length header'}")
            return None
        if problem:
            log.warning("framing: %s (the message is read anyway)", problem)
        if length > self.max_message_bytes:
            await self._discard(length)
            return None
        try:
            return await self.reader.readexactly(length)
        except asyncio.IncompleteReadError as exc:
            log.warning("input ended inside a message (%d of %d bytes)", len(exc.partial), length)
            raise Closed from None

    async def _discard(self, length: int) -> None:
        """Stream an oversized body away, then answer it with the id found in its head."""
        head, left = b"", length
        while left:
            chunk = await self.reader.read(min(left, _CHUNK))
            if not chunk:
                raise Closed
            if len(head) < LINE_LIMIT:
                head += chunk[: LINE_LIMIT - len(head)]
            left -= len(chunk)
        self.send_error(
            sniff_id(head), errors.INVALID_REQUEST,
            f"message too large: {length} bytes (the maximum is {self.max_message_bytes})",
        )

    # -- dispatching -------------------------------------------------------------------------

    def dispatch(self, body: bytes) -> None:
        try:
            msg = msgspec.json.decode(body)
        except (msgspec.DecodeError, RecursionError) as exc:
            why = (not_utf8(body) or lone_surrogate(body)) \
                if isinstance(exc, msgspec.DecodeError) else None
            self.send_error(sniff_id(body), errors.PARSE_ERROR, f"parse error: {why or exc}")
            return
        if isinstance(msg, list):
            self.send_error(None, errors.INVALID_REQUEST, "invalid request: batches are not supported")
            return
        if not isinstance(msg, dict):
            self.send_error(None, errors.INVALID_REQUEST,
                            "invalid request: a message must be a JSON object")
            return
        problem = self.check_envelope(msg)
        msg_id = msg.get("id") if _valid_id(msg.get("id")) else None
        is_request = "method" in msg and msg_id is not None
        if problem:
            if "method" in msg or msg_id is not None:
                self.send_error(msg_id, errors.INVALID_REQUEST, f"invalid request: {problem}")
            else:
                log.warning("dropping a malformed message: %s", problem)
            return
        if self.authenticate is not None:
            refusal = self.authenticate(msg)
            if refusal is not None:
                log.warning("connection refused: %s", refusal)
                self.send_error(msg_id, errors.UNAUTHORIZED, f"unauthorized: {refusal}")
                self.rejected = True
                return
            self.authenticate = None
        if is_request and shut_down(self.protocol) and msg["method"] != types.EXIT:
            self.send_error(msg_id, errors.INVALID_REQUEST,
                            "invalid request: the server is shutting down")
            return
        try:
            message = self.protocol.structure_message(msg)
        except JsonRpcException as exc:
            if is_request:
                cause = exc.__cause__
                detail = ("; ".join(cattrs.transform_error(cause))
                          if isinstance(cause, cattrs.BaseValidationError) else exc.message)
                self.send_error(msg_id, errors.INVALID_PARAMS, f"invalid params: {detail}")
            return
        try:
            self.protocol.handle_message(message)
        except Exception:
            log.exception("handling %s failed", msg.get("method", "a response"))
            if is_request:
                self.send_error(msg_id, errors.INTERNAL_ERROR, "internal error")

    @staticmethod
    def check_envelope(msg: dict) -> str | None:
        """What makes this object not a JSON-RPC 2.0 message, or None."""
        if msg.get("jsonrpc") != "2.0":
            return '"jsonrpc" must be "2.0"'
        if "id" in msg and not _valid_id(msg["id"]):
            return '"id" must be an integer or a string'
        if "method" in msg:
            if not isinstance(msg["method"], str) or not msg["method"]:
                return '"method" must be a non-empty string'
            if msg.get("params") is not None and not isinstance(msg["params"], dict | list):
                return '"params" must be an object or an array'
            return None
        if "id" not in msg:
            return 'a message needs a "method" or an "id"'
        if "error" in msg:
            err = msg["error"]
            if not isinstance(err, dict) or not isinstance(err.get("code"), int) \
                    or not isinstance(err.get("message"), str):
                return '"error" must be an object with an integer code and a message'
        elif "result" not in msg:
            return 'a response needs a "result" or an "error"'
        return None
