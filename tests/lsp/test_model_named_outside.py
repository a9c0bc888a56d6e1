"""A model named outside the request (a request's `model` param, initializationOptions.model)
decides all a model decides, as the same name in the body does: the encoding, and Claude's
image rule and Anthropic's tool-use prompt too (they were the body's `model`'s alone: a
1500x1000 image cost 1,113 tokens, OpenAI's tiles, by the param and 1,608 by the body)."""

from __future__ import annotations

import base64
import struct

import pytest
from conftest import result

pytestmark = pytest.mark.e2e

_PNG = (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 1500, 1000)
        + b"\x08\x02\x00\x00\x00" + b"\x00" * 4)
IMAGE = [{"role": "user", "content": [
    {"type": "text", "text": "what"},
    {"type": "image_url",
     "image_url": {"url": "data:image/png;base64," + base64.b64encode(_PNG).decode()}}]}]
TOOLS = {"max_tokens": 1000, "messages": [{"role": "user", "content": "hi"}],
         "tools": [{"name": "sh", "description": "run", "input_schema": {"type": "object"}}]}


async def test_the_model_param_reads_images_as_the_bodys_model_does(own_daemon):
    claude = "claude-sonnet-4-5"
    by_body = await result(own_daemon, "ctx/prepare", {
        "request": {"model": claude, "messages": IMAGE}, "format": "openai"})
    by_param = await result(own_daemon, "ctx/prepare", {
        "request": {"messages": IMAGE}, "format": "openai", "model": claude})
    counted = await result(own_daemon, "ctx/count", {
        "messages": IMAGE, "format": "openai", "model": claude})
    trimmed = await result(own_daemon, "ctx/trim", {
        "messages": IMAGE, "format": "openai", "model": claude, "budget": 100_000})
    gpt = await result(own_daemon, "ctx/count", {
        "messages": IMAGE, "format": "openai", "model": "gpt-4o"})
    assert by_param["tokens"] == by_body["tokens"] == counted["total"] == trimmed["tokens"]
    assert counted["total"] > gpt["total"] + 400  # Claude's pixel rule, not OpenAI's tiles


async def test_the_model_param_sizes_anthropics_tool_prompt(own_daemon):
    opus = "claude-3-opus-20240229"  # 530 tokens of tool-use prompt, where current ones 346
    by_body = await result(own_daemon, "ctx/prepare", {
        "request": {"model": opus, **TOOLS}, "format": "anthropic"})
    by_param = await result(own_daemon, "ctx/prepare", {
        "request": TOOLS, "format": "anthropic", "model": opus})
    current = await result(own_daemon, "ctx/prepare", {
        "request": TOOLS, "format": "anthropic", "model": "claude-sonnet-4-5"})
    assert by_param["tokens"] == by_body["tokens"] == current["tokens"] + 530 - 346
