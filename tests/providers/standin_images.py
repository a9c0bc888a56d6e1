"""What the stand-in charges for an image, by the providers' published rules, the size read
from the image's own header (PNG, GIF, JPEG, WebP). Written apart from ctxlayer's media.py, so that
the stand-in checks ctxlayer's image counts instead of repeating them. An image whose size
cannot be read (a URL, another format) costs what a small image does, as before."""

from __future__ import annotations

import base64
import binascii
import math
import struct
from typing import Any

SMALL = 85  # a small image: OpenAI's low detail, also what an unreadable image is taken for
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def size_of(b64: str) -> tuple[int, int] | None:
    """(width, height) from a base64 PNG, GIF, JPEG or WebP header; None otherwise."""
    try:
        data = base64.b64decode(b64)
    except (binascii.Error, ValueError):
        return None
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return struct.unpack("<HH", data[6:10])
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp(data)
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 <= len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in _SOF:
                h, w = struct.unpack(">HH", data[i + 5:i + 9])
                return w, h
            i += 2 + struct.unpack(">H", data[i + 2:i + 4])[0]
    return None


def _webp(data: bytes) -> tuple[int, int] | None:
    """The canvas of a WebP file, by its first chunk: VP8X (extended: 24-bit sizes less one),
    VP8 (lossy: 14-bit sizes after the frame's start code) or VP8L (lossless: 14-bit sizes
    less one, packed after its signature byte)."""
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        return (int.from_bytes(data[24:27], "little") + 1,
                int.from_bytes(data[27:30], "little") + 1)
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        w, h = struct.unpack("<HH", data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


def anthropic_tokens(size: tuple[int, int] | None) -> int:
    """Anthropic's published rule: width * height / 750 once the long edge is at most 1568
    px, and about 1,600 tokens at most."""
    if size is None:
        return SMALL
    w, h = size
    scale = min(1.0, 1568 / max(w, h, 1))
    return max(1, min(1600, math.ceil(w * scale * h * scale / 750)))


def openai_tokens(size: tuple[int, int] | None, detail: str) -> int:
    """OpenAI's published rule: 85 at low detail; else within 2048 x 2048, the short side at
    most 768, 170 a 512-px tile plus 85."""
    if size is None or detail == "low":
        return SMALL
    w, h = size
    fit = min(1.0, 2048 / max(w, h, 1))
    w, h = w * fit, h * fit
    short = min(1.0, 768 / max(min(w, h), 1))
    w, h = w * short, h * short
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def _data_of(url: Any) -> str | None:
    """The base64 of a data URL; None for any other URL."""
    if isinstance(url, str) and url.startswith("data:") and "," in url:
        return url.split(",", 1)[1]
    return None


def image_tokens(block: dict) -> int | None:
    """The tokens of an image block (Anthropic `image`, OpenAI `image_url`, a Responses
    `input_image`); None for any other block."""
    if block.get("type") == "input_image":
        data = _data_of(block.get("image_url"))
        detail = block.get("detail") if isinstance(block.get("detail"), str) else "auto"
        return openai_tokens(size_of(data) if data else None, detail)
    if block.get("type") == "image":
        source = block.get("source")
        data = source.get("data") if isinstance(source, dict) and \
            source.get("type") == "base64" else None
        return anthropic_tokens(size_of(data) if isinstance(data, str) else None)
    if block.get("type") == "image_url":
        image = block.get("image_url")
        detail = image.get("detail") or "auto" if isinstance(image, dict) else "auto"
        data = _data_of(image.get("url")) if isinstance(image, dict) else None
        return openai_tokens(size_of(data) if data else None, detail)
    return None


def media_tokens(value: Any) -> int:
    """The tokens of every image in a message, block or list of them."""
    if isinstance(value, list):
        return sum(media_tokens(v) for v in value)
    if not isinstance(value, dict):
        return 0
    here = image_tokens(value)
    if here is not None:
        return here
    return sum(media_tokens(v) for k, v in value.items() if k in ("content", "output"))
