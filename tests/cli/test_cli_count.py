"""`ctxlayer count` on what a user sends (real processes, the real tokenizers): a PDF costs its
pages whether its page tree is plain or packed in an object stream."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import pytest
from providers.pdfs import classic, packed

from ctxlayer.core.formats.media import PDF_PAGE_TOKENS

CLI = [sys.executable, "-m", "ctxlayer"]


def count(body: dict, *args: str) -> dict:
    p = subprocess.run([*CLI, "count", "--json", *args], input=json.dumps(body).encode(),
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def _anthropic_pdf(data: bytes) -> dict:
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [{
        "role": "user", "content": [
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                            "data": base64.b64encode(data).decode()}},
            {"type": "text", "text": "Summarize"}]}]}


def _openai_pdf(data: bytes) -> dict:
    url = "data:application/pdf;base64," + base64.b64encode(data).decode()
    return {"model": "gpt-4o", "messages": [{"role": "user", "content": [
        {"type": "file", "file": {"filename": "paper.pdf", "file_data": url}},
        {"type": "text", "text": "Summarize"}]}]}


@pytest.mark.parametrize("request_of", [_anthropic_pdf, _openai_pdf])
def test_a_pdf_costs_its_pages_with_its_tree_plain_or_packed(request_of):
    plain, compressed = count(request_of(classic(20))), count(request_of(packed(20)))
    assert plain["total"] == compressed["total"]
    assert 20 * PDF_PAGE_TOKENS < compressed["total"] < 20 * PDF_PAGE_TOKENS + 50
