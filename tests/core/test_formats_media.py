"""What non-text parts cost: sizes read from image headers, the providers' published image
rules at their documented examples, PDFs by page, and the stated defaults for a URL."""

from __future__ import annotations

import pytest
from providers.payloads import b64, gif, jpeg, pdf, png, webp_vp8x

from ctxlayer.core.formats import media


@pytest.mark.parametrize("make", [png, gif, jpeg, webp_vp8x])
def test_sizes_are_read_from_each_header(make):
    assert media.size_of_base64(b64(make(1234, 567))) == (1234, 567)


def test_a_jpeg_frame_after_a_large_exif_block_is_found():
    exif = b"\xff\xe1" + (60_000).to_bytes(2, "big") + b"\x00" * 59_998
    data = jpeg(800, 600)
    data = data[:2] + exif + data[2:]
    assert media.size_of_base64(b64(data)) == (800, 600)


def test_not_an_image_has_no_size():
    assert media.size_of_base64(b64(b"hello world, not an image")) is None
    assert media.size_of_base64("%%% not base64") is None


@pytest.mark.parametrize("size,detail,tokens", [
    ((1024, 1024), "high", 765),   # OpenAI's worked examples
    ((2048, 4096), "high", 1105),
    ((4096, 8192), "low", 85),
    ((512, 512), "auto", 255),
    (None, "auto", 1105),  # unknown size: a 1920x1080 screenshot
])
def test_openai_image_rule(size, detail, tokens):
    assert media.openai_image_tokens(size, detail) == tokens


@pytest.mark.parametrize("size,tokens", [
    ((200, 200), 54),     # Anthropic's table
    ((1000, 1000), 1334),
    ((1092, 1092), 1590),
    ((4000, 3000), 1600),  # scaled down, capped
    (None, 1600),
])
def test_anthropic_image_rule(size, tokens):
    assert media.anthropic_image_tokens(size) == tokens


def test_pdfs_by_page_and_a_default_without_data():
    assert media.pdf_tokens(b64(pdf(7))) == 7 * media.PDF_PAGE_TOKENS
    assert media.pdf_tokens(None) == media.PDF_DEFAULT_PAGES * media.PDF_PAGE_TOKENS


def test_data_urls_are_split_and_others_are_not():
    assert media.split_data_url("data:image/png;base64,AAAA") == ("image/png", "AAAA")
    assert media.split_data_url("https://e/x.png") is None
    assert media.split_data_url("data:text/plain,hello") is None
