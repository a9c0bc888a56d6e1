"""A PDF's pages from its page tree, whether its objects are plain (PDF 1.4) or packed in
compressed object streams (PDF 1.5, pdfTeX's default); what cannot be read is estimated from
the file's size; a decompression bomb costs a bounded amount of memory."""

from __future__ import annotations

import base64
import subprocess
import sys
import tracemalloc
import zlib

import pytest
from providers.pdfs import bomb, classic, packed, plain, stream

from ctxlayer.core.formats import media, pdf


@pytest.mark.parametrize("pages", [1, 20, 137])
def test_plain_and_packed_files_of_the_same_pages_count_the_same(pages):
    assert pdf.page_count(classic(pages)) == pages
    assert pdf.page_count(packed(pages)) == pages
    assert media.pdf_tokens(base64.b64encode(packed(pages)).decode()) == (
        pages * media.PDF_PAGE_TOKENS)


def test_the_root_count_is_the_total_not_an_inner_node():
    # 20 pages in nodes of 8: inner counts 8, 8, 4; the root says 20
    assert pdf.page_count(packed(20, per_node=8, per_stream=3)) == 20


def test_a_file_without_a_tree_counts_its_page_objects():
    page = b"<< /Type /Page /MediaBox [0 0 1 1] >>"
    assert pdf.page_count(bytes(plain({3: page, 4: page, 5: page}))) == 3


def _encrypted(data: bytes) -> bytes:
    return bytes(b ^ 0x5A for b in zlib.compress(data))


@pytest.mark.parametrize("filt,pack", [
    (b"/LZWDecode", lambda b: b),        # a filter not read here
    (b"/FlateDecode", _encrypted),       # an encrypted file's streams: not zlib data
    (b"[/FlateDecode] /DecodeParms << /Predictor 12 >>", zlib.compress),  # a predictor
])
def test_an_unreadable_tree_is_estimated_from_the_size_not_one_page(filt, pack):
    data = packed(20, filt=filt, pack=pack) + b"%" + b"x" * 400_000
    assert pdf.page_count(data) is None
    pages = media.pdf_pages(data)
    assert pages == -(-len(data) // media.PDF_BYTES_PER_PAGE) > 1


def test_an_estimate_has_bounds():
    assert media.pdf_pages(b"%PDF-1.5\n" + b"x" * 4_000_000) == media.PDF_ESTIMATE_MAX_PAGES
    assert media.pdf_pages(b"not a pdf") == 1


def test_a_decompression_bomb_costs_a_bounded_amount_of_memory():
    bomb256 = bomb(256 << 20)  # 256 MiB inflated, before the page tree
    data = packed(30, before=(bomb256, bomb256))
    tracemalloc.start()
    try:
        pages = pdf.page_count(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * pdf.INFLATE_BUDGET  # not the 512 MiB the streams hold
    # the budget went to the bombs, so the tree was not reached: an estimate, never 1 page
    assert pages is None
    assert media.pdf_pages(data) == -(-len(data) // media.PDF_BYTES_PER_PAGE)


def test_reading_stops_at_the_root_and_a_later_bomb_is_never_inflated(monkeypatch):
    inflated: list[int] = []
    real = pdf._read_object_stream

    def spy(tree, out, first, cut):
        inflated.append(len(out))
        real(tree, out, first, cut)

    monkeypatch.setattr(pdf, "_read_object_stream", spy)
    good = packed(12, per_stream=100)  # the whole tree in one stream
    head = b"<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode"
    tail = bytes(plain({90: stream(head, bomb(64 << 20))}))
    assert pdf.page_count(good.replace(b"%%EOF\n", b"") + tail) == 12
    assert len(inflated) == 1 and max(inflated) < 1 << 20
    # a tree in the plain bytes: no stream is inflated at all
    assert pdf.page_count(classic(12).replace(b"%%EOF\n", b"") + tail) == 12
    assert len(inflated) == 1


def test_an_object_cut_by_the_budget_is_not_read(monkeypatch):
    # the root's "/Count 137" cut to "/Count 1" by the budget must not count as 1 page
    data = packed(137, per_stream=1000)
    stream = data[data.index(b"stream\n") + 7:]
    whole = zlib.decompressobj().decompress(stream)
    cut_at = whole.index(b"/Count 137") + len(b"/Count 1")
    monkeypatch.setattr(pdf, "INFLATE_BUDGET", cut_at)
    # the inner nodes read before it say 8: a part of the tree, so not a count either
    assert pdf.page_count(data) is None
    monkeypatch.setattr(pdf, "INFLATE_BUDGET", len(whole))
    assert pdf.page_count(data) == 137


def test_a_count_or_offset_of_thousands_of_digits_is_no_count():
    """`int` refuses more than 4,300 digits: a `/Count` of 5,000 digits was a 500 through the
    gateway and a traceback from `ctxlayer count`."""
    huge = b"9" * 5000
    data = bytes(plain({1: b"<< /Type /Catalog /Pages 2 0 R >>",
                        2: b"<< /Type /Pages /Kids [3 0 R] /Count " + huge + b" >>",
                        3: b"<< /Type /Page /Parent 2 0 R >>"}))
    assert pdf.page_count(data) == 1  # its one page object
    first = packed(5, filt=b"/FlateDecode").replace(b"/First ", b"/First " + huge, 1)
    media.pdf_pages(first)  # read without an error


def test_a_long_run_of_digits_is_read_once():
    """An ASCIIHex image of zeros made the object header's `\\d+` try every start in the run
    again: 78 KiB took 40 s through the gateway, a megabyte hours. Run apart, so that a
    reading that never ends fails here instead of holding the suite."""
    code = ("import sys; from ctxlayer.core.formats import pdf; "
            "data = b'%PDF-1.4\\n1 0 obj\\n<< /Type /Page >>\\nendobj\\n2 0 obj\\n<< /Length 9 >>"
            "\\nstream\\n' + b'0' * 2_000_000 + b'\\nendstream\\nendobj\\n'; "
            "sys.stdout.write(str(pdf.page_count(data)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stdout) == (0, "1"), done.stderr
