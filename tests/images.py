"""Shared by the test suites: images as a client sends them, base64. Most tests need only a
PNG's signature and header chunk (all the size reading looks at); those whose image goes to
the stand-in provider whole send one that decodes (`png_whole`)."""

from __future__ import annotations

import base64
import struct
import zlib


def png(width: int, height: int, padding: int = 0) -> str:
    """Base64 of a PNG's signature and header chunk (its CRC left zero), then ``padding``
    zero bytes."""
    head = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + \
        struct.pack(">II", width, height) + b"\x08\x02\x00\x00\x00" + b"\x00" * 4
    return base64.b64encode(head + b"\x00" * padding).decode()


def png_whole(width: int, height: int) -> str:
    """Base64 of a whole PNG that decodes: a black ``width`` x ``height`` picture."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    raw = b"".join(b"\x00" + b"\x00" * (width * 3) for _ in range(height))
    return base64.b64encode(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")).decode()
