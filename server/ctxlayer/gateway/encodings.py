"""A request body sent compressed (`Content-Encoding`), made plain before anything reads it;
and an upstream's answer compressed although asked for plain (`answer_decoder`).

Codex CLI signed in with ChatGPT sends its Responses requests as zstd; other clients gzip
theirs. The gateway reads every body plain (it fits the conversation in it) and forwards what
it read without the client's `Content-Encoding`: the fitted body is new JSON, and a
passed-through one is the same bytes decoded.

Owns: the codings read (`gzip`, `x-gzip`, `deflate`, `zstd`, `identity`, several applied in
the order the header lists them), and their refusals, said as GatewayErrors: 415 for a coding
not read here, 400 for bytes that are not what the header says, 413 for a body that
decompresses past `[gateway] max_body_mb` (the decoders stop there: a small body that would
expand to gigabytes is never expanded). Must not do I/O.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any, Protocol

from ctxlayer.gateway.errors import GatewayError

try:  # the standard library's from Python 3.14, the same module as a package before it
    from compression import zstd  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - which one depends on the Python
    from backports import zstd  # type: ignore[import-not-found,no-redef]

#: the codings this module reads, as the 415 lists them
READ = ("gzip", "deflate", "zstd")


class Frame(Protocol):
    """One frame's decompressor: zlib's and zstd's alike."""

    eof: bool
    unused_data: bytes

    def decompress(self, data: bytes) -> bytes: ...


def plain(raw: bytes, header: str | None, max_bytes: int) -> bytes:
    """``raw`` decoded by the codings ``header`` lists (the last applied first), or
    GatewayError. A body without the header comes back as it is."""
    codings = [c.strip().lower() for c in (header or "").split(",") if c.strip()]
    for coding in reversed(codings):
        decode = _DECODERS.get(coding)
        if decode is None:
            raise GatewayError(415, f"the body's Content-Encoding {coding!r} cannot be read "
                                    f"here (send it plain, or as {', '.join(READ)})",
                               field="Content-Encoding")
        try:
            raw = decode(raw, max_bytes)
        except (zlib.error, zstd.ZstdError, EOFError) as exc:
            raise GatewayError(400, f"the body is not the {coding} its Content-Encoding says "
                                    f"({exc})", field="Content-Encoding") from exc
        if len(raw) > max_bytes:
            raise GatewayError(413, f"the body decompresses to more than "
                                    f"{max_bytes // (1024 * 1024)} MiB ([gateway] max_body_mb)",
                               field="body")
    return bytes(raw)


#: bytes of a compressed body given to a decoder at a time: what a frame leaves unread after
#: its end is at most this much (the whole rest of the body was copied at every frame's end, so
#: an 8 MB body of 400,000 empty gzip members took 109 s to read)
STEP = 64 * 1024


def _frames(raw: bytes, max_bytes: int, decoder: Callable[[], Any]) -> bytes:
    """Every frame of a stream, one after another (gzip members, zstd frames), each read by
    a new ``decoder()`` (zlib's and zstd's decompressors alike), stopping one byte past
    ``max_bytes``."""
    out = bytearray()
    view, at = memoryview(raw), 0
    left = b""  # what the last frame left unread after its end: the next frame's start
    frame = None
    while at < len(raw) or left:
        if left:
            piece, left = left, b""
        else:
            piece, at = view[at:at + STEP], at + STEP
        if frame is None:
            frame = decoder()
        out += frame.decompress(piece, max_bytes + 1 - len(out))
        if len(out) > max_bytes:
            return bytes(out)
        if frame.eof:
            left, frame = frame.unused_data, None
    if frame is not None:
        raise EOFError("the stream ends before its end")
    return bytes(out)


def _gzip(raw: bytes, max_bytes: int) -> bytes:
    return _frames(raw, max_bytes, lambda: zlib.decompressobj(16 + zlib.MAX_WBITS))


def _deflate(raw: bytes, max_bytes: int) -> bytes:
    # RFC 9110 says zlib-wrapped; some clients send the bare deflate stream
    try:
        return _frames(raw, max_bytes, lambda: zlib.decompressobj(zlib.MAX_WBITS))
    except zlib.error:
        return _frames(raw, max_bytes, lambda: zlib.decompressobj(-zlib.MAX_WBITS))


def _zstd(raw: bytes, max_bytes: int) -> bytes:
    return _frames(raw, max_bytes, zstd.ZstdDecompressor)


class NotAsSaid(ValueError):
    """An answer's bytes are not what its Content-Encoding says."""


class AnswerDecoder:
    """An upstream's answer compressed although the gateway asked for it plain (a proxy or
    a server that ignores `Accept-Encoding: identity`), decoded as its chunks come: its usage
    is read, and the client gets the stream it asked for (`forward.without_usage` works on
    plain events only). Frames follow one another (gzip members, zstd frames); a `deflate`
    answer may be zlib-wrapped, as RFC 9110 says, or the bare stream."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._frame: Frame | None = None
        self._bare = False  # a deflate answer without the zlib wrapper
        self._decoded = False  # some bytes decoded: the coding's form is known
        self._unread = b""  # a deflate answer's first bytes, until some decode

    def feed(self, data: bytes) -> bytes:
        """The plain bytes ``data`` completes; NotAsSaid when they cannot be decoded."""
        out = bytearray()
        while data:
            if self._frame is None:
                self._frame = self._new()
            try:
                got = self._frame.decompress(data)
            except (zlib.error, zstd.ZstdError) as exc:
                if self.coding != "deflate" or self._bare or self._decoded:
                    raise NotAsSaid(f"not the {self.coding} its Content-Encoding says "
                                    f"({exc})") from exc
                # the bare deflate stream: read again from its first byte
                data, self._unread, self._bare, self._frame = self._unread + data, b"", True, None
                continue
            if not self._decoded and self.coding == "deflate" and not self._bare:
                self._unread += data
            self._decoded = self._decoded or bool(got)
            out += got
            if not self._frame.eof:
                break
            data, self._frame = self._frame.unused_data, None
        return bytes(out)

    def end(self) -> None:
        """NotAsSaid when the answer ended inside a frame."""
        if self._frame is not None:
            raise NotAsSaid(f"the {self.coding} answer ends before its end")

    def _new(self) -> Frame:
        if self.coding == "zstd":
            return zstd.ZstdDecompressor()
        if self.coding == "deflate":
            return zlib.decompressobj(-zlib.MAX_WBITS if self._bare else zlib.MAX_WBITS)
        return zlib.decompressobj(16 + zlib.MAX_WBITS)


def answer_decoder(header: str | None) -> AnswerDecoder | None:
    """The decoder of an answer whose Content-Encoding is ``header``: None for a plain one,
    and for codings not read here or several at once (passed on as they came, unread)."""
    coding = (header or "").strip().lower()
    if coding in ("", "identity") or coding not in _DECODERS:
        return None
    return AnswerDecoder("gzip" if coding == "x-gzip" else coding)


_DECODERS: dict[str, Callable[[bytes, int], bytes]] = {
    "identity": lambda raw, _max: raw, "gzip": _gzip, "x-gzip": _gzip, "deflate": _deflate,
    "zstd": _zstd,
}
