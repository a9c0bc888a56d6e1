"""`ctxlayer count` on what a user sends (real processes, the real tokenizers): a PDF costs its
pages whether its page tree is plain or packed in an object stream; an Anthropic request is
read as one without a `system` field, or as `--format` names it; Anthropic's tool-use prompt
is the model's however the provider names the model."""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import sys

import pytest
from providers.pdfs import classic, packed

from ctxlayer.core.formats.media import PDF_PAGE_TOKENS
from ctxlayer.tokenizers import counter_for

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
        assert told["tools"] - definitions(body) == 346


def definitions(body: dict) -> int:
    """The tokens of a body's tool definitions alone, as its model's counter counts them."""
    return counter_for(body["model"]).count(json.dumps(body["tools"], separators=(",", ":")))


def test_the_format_can_be_named():
    # `system` is Anthropic's: Chat Completions has no such field, so it is not counted
    body = {**BODY, "system": "You answer in one word, always, whatever is asked."}
    as_openai = count(body, "--format", "openai")
    assert as_openai["total"] < count(body)["total"]
    p = subprocess.run([*CLI, "count", "--format", "gemini"], input=b"[]", capture_output=True,
                       timeout=60)
    assert p.returncode == 2 and b"--format" in p.stderr and b"gemini" in p.stderr


@pytest.mark.parametrize("model", ["us.anthropic.claude-3-5-haiku-20241022-v1:0",
                                   "anthropic/claude-3.5-haiku"])
def test_claude_3_5_haiku_has_its_tool_prompt_however_it_is_named(model):
    """Anthropic's table: 264 tokens for Claude 3.5 Haiku, where the current models have 346."""
    plain = definitions({**BODY, "model": model})
    assert count({**BODY, "model": model})["tools"] - plain == 264
    assert count({**BODY, "model": "claude-3-5-haiku-20241022"})["tools"] - plain == 264


def _png(width: int, height: int, padding: int) -> bytes:
    """A PNG's signature and header (what the image rules read) and `padding` bytes of data."""
    header = struct.pack(">II", width, height) + b"\x08\x02\x00\x00\x00"
    return (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + header + b"\x00" * 4
            + b"\x00" * padding)


def _claude_chat_with_image() -> dict:
    url = "data:image/png;base64," + base64.b64encode(_png(800, 600, 150_000)).decode()
    return {"model": "anthropic/claude-sonnet-4.5", "max_tokens": 1000, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "what is in this screenshot?"},
                                     {"type": "image_url", "image_url": {"url": url}}]},
        {"role": "assistant", "content": "A chart."},
        {"role": "user", "content": "and the title?"}]}


def test_a_chat_completions_image_for_a_claude_model_is_read_as_openai():
    """OpenRouter's Chat Completions body for a Claude model with an `image_url` was detected
    as Anthropic: the image cost its base64 as text (165,489 tokens for a 150 KB PNG) and
    `trim --budget 8000` dropped it. An `image_url` is OpenAI's alone: it decides the format."""
    body = _claude_chat_with_image()
    detected = count(body)
    assert detected == count(body, "--format", "openai")
    assert detected["total"] < 2000  # Claude's image rule: 800x600 is 640 tokens
    p = subprocess.run([*CLI, "trim", "--budget", "8000"], input=json.dumps(body).encode(),
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    trimmed = json.loads(p.stdout)
    assert trimmed["messages"] == body["messages"] and trimmed["ctxlayer"]["dropped"] == []


def test_the_model_flag_decides_what_the_bodys_model_would():
    """`--model` set the encoding only: Anthropic's tool-use prompt and Claude's image rule
    were the body's `model`'s (claude-3-opus in the body, --model claude-sonnet-4-5: 552 tools
    tokens, Opus 3's; no model in the body, --model an Opus 3: 368, not 552)."""
    opus, sonnet = "claude-3-opus-20240229", "claude-sonnet-4-5"
    tools = count({**BODY, "model": opus})["tools"]
    assert count({**BODY, "model": sonnet}, "--model", opus)["tools"] == tools
    assert count({k: v for k, v in BODY.items() if k != "model"}, "--model", opus)["tools"] \
        == tools
    assert count({**BODY, "model": opus}, "--model", sonnet)["tools"] == tools - 530 + 346
    url = "data:image/png;base64," + base64.b64encode(_png(1500, 1000, 0)).decode()
    image = {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": url}}]}]}
    by_body = count({**image, "model": sonnet})["total"]
    assert count({**image, "model": "gpt-4o"}, "--model", sonnet)["total"] == by_body
    assert count(image, "--model", sonnet)["total"] == by_body


def test_a_claude_request_in_chat_completions_shape_has_the_tool_use_prompt():
    """OpenRouter's `anthropic/claude-sonnet-4.5` with a Chat Completions tool: 42 tools
    tokens, where the same tool in Anthropic's shape cost 382 (its 346-token prompt)."""
    tools = [{"type": "function", "function": {
        "name": "read_file", "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
    body = {"model": "anthropic/claude-sonnet-4.5", "tools": tools,
            "messages": [{"role": "user", "content": "read"}]}
    assert count(body)["tools"] == definitions(body) + 346
    assert count({**body, "tool_choice": "required"})["tools"] == definitions(body) + 313


def run_count(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "count", *args], input=stdin, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("name,text,why", [
    ("app.log", "[INFO] server started\n[WARN] disk 90%\n", "not valid JSON"),
    ("README.md", "[![build](https://x/y.svg)](https://x)\n# Title\n", "not valid JSON"),
    ("events.jsonl", '{"a":1}\n{"a":2}\n', "not valid JSON"),
    ("package.json", '{"name":"pkg","version":"1.0.0"}', 'JSON without "messages" or "input"'),
    ("ids.json", "[1, 2, 3]", "a JSON list without messages (objects with a role)"),
])
def test_text_that_starts_like_json_but_is_no_chat_is_counted_as_text(tmp_path, name, text,
                                                                       why):
    """README says count takes "a text, or a chat", but a log of `[INFO] ...`, a README
    starting with a badge, JSONL or a package.json was refused as "not valid JSON ...
    expected a list of messages" (exit 2): it is counted as text, saying so on stderr."""
    path = tmp_path / name
    path.write_text(text)
    p = run_count("--json", str(path))
    assert p.returncode == 0, p.stderr
    plain = run_count("--json", "--text", str(path))
    assert json.loads(p.stdout) == json.loads(plain.stdout)
    assert json.loads(p.stdout)["tokens"] == []  # no messages: the text's own count
    assert p.stderr == (f"ctxlayer count: {path} counted as text: it is not a chat ({why}); "
                        "--text says so without this note\n")
    assert plain.stderr == ""


@pytest.mark.parametrize("stdin,said", [
    # a chat with a JSON mistake still gets the JSON error, and the way out
    ('[{"role": "user", "content": "hi"},]', "stdin is not valid JSON (JSON is malformed: "
     "trailing comma in array (byte 35)); expected a list of messages; --text counts it as "
     "plain text"),
    ('{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "yo"}\n',
     "stdin is not valid JSON"),  # JSONL of messages: meant as a chat, not one
    ('{"role": "user", "content": "hi"}',  # one message, not a list: and the way out
     'stdin: one message, not a chat: put it in a list ([{...}]) or a request ({"messages": '
     '[...]}); --text counts it as plain text\n'),
    ('[{"role": "robot", "content": "x"}]', "messages[0].role"),
    ("plain words", 'stdin is not valid JSON'),  # --format says it is a chat
])
def test_what_means_to_be_a_chat_is_still_read_as_one(stdin, said):
    args = ["--format", "openai"] if stdin == "plain words" else []
    p = run_count(*args, stdin=stdin)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("ctxlayer count: ") and said in p.stderr, p.stderr
    assert p.stderr.count("\n") == 1


@pytest.mark.parametrize("stdin,messages", [
    ('[{"role": "user", "content": "hi"}]', 1),
    ('{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}', 1),
    ('{"model": "gpt-4o", "input": "hi"}', 1),
    ("[]", 0),
])
def test_a_chat_in_any_shape_still_counts_as_a_chat(stdin, messages):
    p = run_count("--json", stdin=stdin)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert len(json.loads(p.stdout)["tokens"]) == messages


def test_a_claude_request_in_the_responses_shape_is_counted_as_claude_reads_it():
    """A Responses body for a Claude model (OpenRouter, LiteLLM) costed its image by OpenAI's
    tiles and its tools without Anthropic's tool-use prompt: 1,163 tokens where the same
    request in Chat Completions' shape was 2,007, so the gateway sent three screenshots over
    a 4,000-token window it fitted the other shape into."""
    url = "data:image/png;base64," + base64.b64encode(_png(1500, 1000, 1000)).decode()
    tool = {"type": "function", "name": "get_weather", "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
    responses = {"model": "anthropic/claude-sonnet-4.5", "tools": [tool], "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "what is this?"},
                                     {"type": "input_image", "image_url": url}]}]}
    chat = {"model": "anthropic/claude-sonnet-4.5", "tools": [
        {"type": "function", "function": {k: v for k, v in tool.items() if k != "type"}}],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": url}}]}]}
    theirs, ours = count(chat), count(responses, "--format", "responses")
    assert ours["tokens"] == theirs["tokens"]  # Claude's pixel rule, in both shapes
    assert ours["tools"] > 346 and abs(ours["tools"] - theirs["tools"]) < 10


def _as_openai_bills(body: dict) -> int:
    """OpenAI's own arithmetic (its cookbook's "How to count tokens with tiktoken", which it
    checks against the API's prompt_tokens): 3 per message, every string field of it (the
    role among them), a `name` one more, 3 to prime the reply."""
    enc = counter_for(body["model"])
    total = 3
    for m in body["messages"]:
        total += 3 + sum(enc.count(v) for v in m.values() if isinstance(v, str))
        total += "name" in m
    return total


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"])  # o200k, cl100k
def test_a_chat_costs_what_openai_bills_roles_and_names_included(model):
    body = {"model": model, "messages": [
        {"role": "system", "content": "You are a helpful, pattern-following assistant."},
        {"role": "system", "name": "example_user", "content": "New synergies will help."},
        {"role": "system", "name": "example_assistant", "content": "Things working well."},
        {"role": "user", "content": "This late pivot means we lack time to boil the ocean."},
        {"role": "assistant", "content": "No time to do everything."},
        {"role": "user", "name": "ana", "content": "And the quarterly numbers?"}]}
    # under by the role of each message and the names before
    assert count(body)["total"] == _as_openai_bills(body)
