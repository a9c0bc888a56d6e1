"""`ctxlayer count` on what a user sends (real processes, the real tokenizers): a PDF costs its
pages whether its page tree is plain or packed in an object stream; an Anthropic request is
read as one without a `system` field, or as `--format` names it; Anthropic's tool-use prompt
is the model's however the provider names the model."""

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


TOOLS = [{"name": "get_weather", "description": "the weather of a city",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
BODY = {"model": "claude-sonnet-4-5", "max_tokens": 10, "tools": TOOLS,
        "messages": [{"role": "user", "content": "what is the weather in Paris?"}]}


@pytest.mark.parametrize("body", [
    BODY,  # no `system`: it was read as OpenAI, without Anthropic's tool-use prompt
    {**BODY, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
    {k: v for k, v in BODY.items() if k != "tools"} | {"model": "anthropic/claude-sonnet-4.5"},
])
def test_an_anthropic_request_without_a_system_field_counts_as_anthropic(body):
    detected, told = count(body), count(body, "--format", "anthropic")
    assert detected == told
    if "tools" in body:
        # the tool-use system prompt (346 tokens on current models) on top of the definitions
        assert told["tools"] - count(body, "--format", "openai")["tools"] == 346


def test_the_format_can_be_named():
    as_openai = count(BODY, "--format", "openai")
    assert as_openai["total"] < count(BODY)["total"]
    p = subprocess.run([*CLI, "count", "--format", "gemini"], input=b"[]", capture_output=True,
                       timeout=60)
    assert p.returncode == 2 and b"--format" in p.stderr and b"gemini" in p.stderr


@pytest.mark.parametrize("model", ["us.anthropic.claude-3-5-haiku-20241022-v1:0",
                                   "anthropic/claude-3.5-haiku"])
def test_claude_3_5_haiku_has_its_tool_prompt_however_it_is_named(model):
    """Anthropic's table: 264 tokens for Claude 3.5 Haiku, where the current models have 346."""
    plain = count({**BODY, "model": model}, "--format", "openai")["tools"]
    assert count({**BODY, "model": model})["tools"] - plain == 264
    assert count({**BODY, "model": "claude-3-5-haiku-20241022"})["tools"] - plain == 264
