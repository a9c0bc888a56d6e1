"""What non-text parts cost, by the providers' published rules: image sizes read from the
headers of base64 data (PNG, JPEG, GIF, WebP), OpenAI's tile rule, Anthropic's pixel rule,
PDFs by the pages their page tree states (pdf.py), and stated estimates for audio and for a
PDF whose tree cannot be read. Pure code: bytes in, numbers out; a URL is never fetched, so
an image known only by its URL costs a stated default.
"""

from __future__ import annotations

import base64
import binascii
import math

from ctxlayer.core.formats import pdf
from ctxlayer.core.formats.anthropic_thinking import claude_version, from_version
from ctxlayer.core.guessed import unseen_label
from ctxlayer.core.model_names import is_claude
from ctxlayer.core.text import tokens_said
from ctxlayer.core.tokens import Tokenizer, correction_of

#: An image of unknown size (a URL): costed as a 16:9 screenshot of 1920x1080.
DEFAULT_IMAGE_SIZE = (1920, 1080)
#: OpenAI's fixed cost of a `detail: low` image, and the base and per-tile cost otherwise.
OPENAI_LOW_DETAIL = 85
OPENAI_TILE = 170
#: Anthropic resizes an image whose long edge is over 1568 px; about 1,600 tokens at most.
ANTHROPIC_LONG_EDGE = 1568
ANTHROPIC_MAX_IMAGE = 1600
#: ... and of the Claude models that see larger images (Opus 4.7 on): a 28-pixel patch is a
#: token, up to 2,576 px on the long edge and 4,784 patches
PATCH = 28
LARGE_LONG_EDGE = 2576
LARGE_MAX_IMAGE = 4784
#: A PDF page: Anthropic states 1,500 to 3,000 tokens of text and image per page; the upper
#: figure is used so that a request costed here is never over the provider's window.
PDF_PAGE_TOKENS = 3000
#: A document or file the gateway cannot see (sent by a Files API id or a URL): costed as this
#: many pages, the least it can be. It was five (15,000 tokens each): 13 invoices by file_id
#: and a question to a 200k Claude were refused ("the newest user message alone needs 195012
#: tokens") where the provider took them. The guess is said in the part's label
#: (`guessed.unseen_label`), a request over its budget only by guesses is sent all the same
#: (`prepare_turn`), and a provider's refusal of a prompt too long is fitted again by its count.
PDF_DEFAULT_PAGES = 1
#: A PDF whose page tree cannot be read (its objects encrypted or packed with a filter not
#: read here): its pages estimated from its size. A typeset page with its share of the fonts
#: is some tens of KB, a scanned one more, so the estimate leans to more pages, the side on
#: which a request still fits; never more than Claude's documented limit of 100 pages a PDF
#: (https://docs.aws.amazon.com/bedrock/latest/userguide/inference-api-restrictions.html).
PDF_BYTES_PER_PAGE = 30_000
PDF_ESTIMATE_MAX_PAGES = 100
#: Audio: about 10 tokens per second of speech; seconds estimated from the encoded size.
AUDIO_TOKENS_PER_SECOND = 10
AUDIO_BYTES_PER_SECOND = {"wav": 32_000, "mp3": 16_000}  # 16 kHz 16-bit mono, 128 kbit/s

_HEAD_CHARS = 1 << 16  # base64 characters decoded to find an image's size (48 KiB)


def data_of(text: str) -> bytes:
    """Bytes of base64 text (a data URL's payload or an Anthropic source's data); b"" when it is
    not base64."""
    try:
        return base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        return b""


def _head(b64: str) -> bytes:
    chunk = b64[: _HEAD_CHARS - _HEAD_CHARS % 4]
    return data_of(chunk)


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG, GIF, JPEG or WebP header; None when unreadable."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp_size(data)
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    kind = data[12:16]
    if kind == b"VP8 " and len(data) >= 30:
        return (int.from_bytes(data[26:28], "little") & 0x3FFF,
                int.from_bytes(data[28:30], "little") & 0x3FFF)
    if kind == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8X" and len(data) >= 30:
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Walk the JPEG segments to the first start-of-frame marker, which holds the size."""
    k = 2
    while k + 9 < len(data):
        if data[k] != 0xFF:
            return None
        marker = data[k + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            k += 2
            continue
        length = int.from_bytes(data[k + 2:k + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return int.from_bytes(data[k + 7:k + 9], "big"), int.from_bytes(data[k + 5:k + 7], "big")
        k += 2 + length
    return None


def size_of_base64(b64: str) -> tuple[int, int] | None:
    """An image's size from its base64 data; the whole data is decoded only for a JPEG whose
    frame header lies past the first 48 KiB (large EXIF blocks)."""
    size = image_size(_head(b64))
    if size is None and len(b64) > _HEAD_CHARS:
        size = image_size(data_of(b64))
    return size


def split_data_url(url: str) -> tuple[str, str] | None:
    """("image/png", base64 payload) of a base64 data URL, else None."""
    if not url.startswith("data:"):
        return None
    head, sep, payload = url.partition(",")
    if not sep or ";base64" not in head:
        return None
    return head[5:].split(";", 1)[0], payload


def openai_image_tokens(size: tuple[int, int] | None, detail: str = "auto") -> int:
    """OpenAI's rule: low detail 85; otherwise fit in 2048x2048, scale the shortest side to
    768, then 170 per 512-px tile plus 85."""
    if detail == "low":
        return OPENAI_LOW_DETAIL
    w, h = size or DEFAULT_IMAGE_SIZE
    if w <= 0 or h <= 0:
        return OPENAI_LOW_DETAIL
    scale = min(1.0, 2048 / max(w, h))
    w, h = w * scale, h * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return OPENAI_TILE * math.ceil(w / 512) * math.ceil(h / 512) + OPENAI_LOW_DETAIL


def image_guessed(model: object, detail: str = "auto") -> bool:
    """Whether an image whose size no one here read (sent by a URL or a file id) is costed by a
    guess: OpenAI's low detail is 85 tokens whatever the size; every other rule reads it."""
    return is_claude(model) or detail != "low"


def image_tokens(model: object, size: tuple[int, int] | None, detail: str = "auto") -> int:
    """An image's cost for the model that reads it, in whichever format it came: Claude's
    pixel rule for a Claude model (an OpenAI-shaped request to Anthropic's compatible endpoint,
    OpenRouter, a proxy: Claude reads the image, not OpenAI's tiles; a 2560x1440 screenshot is
    765 tokens by the tiles, 1,600 or 4,784 for Claude), else OpenAI's tile rule."""
    if is_claude(model):
        return anthropic_image_tokens(size, sees_large_images(model))
    return openai_image_tokens(size, detail)


#: the Claude models that take images up to 2,576 px before resizing them (4,784 visual
#: tokens), from each family's first (Opus 4.7, Sonnet 5, Haiku 5.5, Fable); the earlier stop
#: at 1,568 px (about 1,600)
LARGE_IMAGES: tuple[tuple[str, tuple[int, int]], ...] = (
    ("opus", (4, 7)), ("sonnet", (5, 0)), ("haiku", (5, 5)), ("fable", (0, 0)))


def sees_large_images(model: object) -> bool:
    """Whether a Claude model (any spelling: Bedrock's, OpenRouter's dotted one) sees images at
    the larger native resolution (`LARGE_IMAGES`)."""
    return isinstance(model, str) and from_version(claude_version(model), LARGE_IMAGES)


def anthropic_image_tokens(size: tuple[int, int] | None, large: bool = False) -> int:
    """Anthropic's rule: about width*height/750 after scaling the long edge down to 1568 px,
    and never more than about 1,600 (larger images are scaled down further). With ``large``
    (the models that see images at a larger native resolution, `sees_large_images`): one token a 28x28 patch, ⌈w/28⌉ × ⌈h/28⌉, after scaling the long edge
    down to 2,576 px and the patches to 4,784 at most (Anthropic's vision guide; a 2560x1440
    screenshot was counted 1,600 where the provider counts 4,784)."""
    w, h = size or DEFAULT_IMAGE_SIZE
    if w <= 0 or h <= 0:
        return 1
    if large:
        scale = min(1.0, LARGE_LONG_EDGE / max(w, h),
                    math.sqrt(LARGE_MAX_IMAGE * PATCH * PATCH / (w * h)))
        sw, sh = max(1, int(w * scale)), max(1, int(h * scale))
        return min(LARGE_MAX_IMAGE, math.ceil(sw / PATCH) * math.ceil(sh / PATCH))
    scale = min(1.0, ANTHROPIC_LONG_EDGE / max(w, h))
    return max(1, min(ANTHROPIC_MAX_IMAGE, math.ceil(w * scale * h * scale / 750)))


def pdf_pages(data: bytes) -> int:
    """Pages of a PDF: what its page tree says (pdf.py); when that cannot be read, an estimate
    from the file's size, at least 1 and at most PDF_ESTIMATE_MAX_PAGES."""
    pages = pdf.page_count(data)
    if pages is not None:
        return max(1, pages)
    return min(PDF_ESTIMATE_MAX_PAGES, max(1, math.ceil(len(data) / PDF_BYTES_PER_PAGE)))


def pdf_tokens(b64: str | None) -> int:
    """A PDF's cost: PDF_PAGE_TOKENS per page; PDF_DEFAULT_PAGES pages when there is no data."""
    if not b64:
        return PDF_PAGE_TOKENS * PDF_DEFAULT_PAGES
    return PDF_PAGE_TOKENS * pdf_pages(data_of(b64))


def audio_tokens(b64: str, fmt: str) -> int:
    seconds = len(b64) * 3 / 4 / AUDIO_BYTES_PER_SECOND.get(fmt, 16_000)
    return max(1, math.ceil(seconds * AUDIO_TOKENS_PER_SECOND))


def encrypted_tokens(b64: str, counter: Tokenizer) -> int:
    """What encrypted content (a reasoning item's, a thinking block's signature, redacted
    thinking) costs, in ``counter``'s units, from its size: base64 (3 bytes every 4 characters)
    of what the model read, about 4 bytes an encoding's token. The providers do not publish the
    rule; usage reports calibrate what it misses."""
    return math.ceil(len(b64) * 3 // 16 * correction_of(counter))


def label(kind: str, tokens: int, size: tuple[int, int] | None = None, name: str = "",
          unseen: str = "") -> str:
    """A part as an audit line names it: "image 1024x768 (772 tokens)", "thinking (212
    tokens)", "file report.pdf (6000 tokens)"; ``unseen``: how a part the gateway cannot see
    was sent, its cost guessed ("document spec by file_id, unseen (3000 tokens)")."""
    what = kind
    if size is not None:
        what += f" {size[0]}x{size[1]}"
    if name:
        what += f" {name if len(name) <= 30 else name[:29] + '…'}"
    return unseen_label(what, unseen, tokens) if unseen else f"{what} ({tokens_said(tokens)})"
