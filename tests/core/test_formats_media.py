"""What non-text parts cost: sizes read from image headers, the providers' published image
rules at their documented examples, PDFs by page, and the stated defaults for a URL."""

from __future__ import annotations

import pytest
from providers.payloads import b64, gif, jpeg, pdf, png, webp_vp8x

from ctxlayer.core.formats import decode, media
from ctxlayer.core.tokens import WordTokenizer


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


@pytest.mark.parametrize("size,tokens", [
    ((1920, 1080), 69 * 39),  # ⌈1920/28⌉ × ⌈1080/28⌉: under 2,576 px, not resized
    ((2560, 1440), 4784),  # the most patches
    ((5120, 2880), 4784),  # scaled down to fit them
    ((200, 200), 8 * 8),
])
def test_the_newest_claude_models_count_28_pixel_patches_up_to_4784(size, tokens):
    """Opus 4.7 and later see images up to 2,576 px: a 2560x1440 screenshot was counted at
    the older models' 1,600 where the provider counts 4,784."""
    assert media.anthropic_image_tokens(size, large=True) == tokens


@pytest.mark.parametrize("model,large", [
    ("claude-opus-4-7", True), ("claude-opus-4-8-20261001", True), ("claude-opus-5-5", True),
    ("claude-sonnet-5", True), ("us.anthropic.claude-sonnet-5-5-20261101-v1:0", True),
    ("claude-haiku-5-5", True), ("claude-fable-5", True),
    ("anthropic/claude-opus-4.7", True), ("claude-opus-4.7", True),  # OpenRouter's spelling
    ("claude-opus-4-20250514", False),
    ("claude-opus-4-6", False), ("claude-opus-4-1-20250805", False),
    ("claude-sonnet-4-5", False), ("anthropic/claude-sonnet-4.5", False),
    ("claude-haiku-4-5", False), ("claude-3-7-sonnet-latest", False), ("gpt-4o", False),
])
def test_which_models_see_large_images(model, large):
    assert media.sees_large_images(model) is large


def test_an_image_in_a_request_is_counted_by_its_models_rule():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": b64(png(2560, 1440))}}
    for model, tokens in (("claude-sonnet-4-5", 1600), ("claude-opus-4-7", 4784)):
        body = {"model": model, "max_tokens": 10, "messages": [
            {"role": "user", "content": [image, {"type": "text", "text": "what is it?"}]}]}
        assert decode("anthropic", body, WordTokenizer()).messages[0].parts_tokens == tokens


@pytest.mark.parametrize("model, tokens", [
    ("claude-sonnet-4-5", 1600), ("anthropic/claude-3.5-sonnet", 1600),
    ("claude-opus-4-7", 4784), ("gpt-4o", 1105)])
def test_an_openai_shaped_image_is_counted_by_the_rule_of_the_model_that_reads_it(model,
                                                                                   tokens):
    """A Chat Completions request to a Claude model (Anthropic's OpenAI-compatible endpoint,
    OpenRouter, a proxy) was costed by OpenAI's tiles: a 2560x1440 screenshot 1,105 tokens
    where Claude reads 1,600 (4,784 on the newest), the request fitted short of its count."""
    url = f"data:image/png;base64,{b64(png(2560, 1440))}"
    body = {"model": model, "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "what?"}]}]}
    assert decode("openai", body, WordTokenizer()).messages[0].parts_tokens == tokens
