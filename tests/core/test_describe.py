"""Audit lines say what cost the tokens: each non-text part by its kind, size and cost, each
tool call by its name and arguments, then the text; a plain text message as before."""

from __future__ import annotations

import ast
import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from images import png

from ctxlayer.core.formats import decode
from ctxlayer.core.text import (
    describe,
    lines_of,
    one_line,
    path_line,
    reads_as_markdown,
    sound,
    split_lines,
)
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message, ToolCall

WORDS = WordTokenizer()




THINKING = {"type": "thinking", "thinking": " ".join(["step"] * 212), "signature": "s"}
READ = {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.py"}}

CASES = [
    ("openai", {"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + png(1024, 768)}},
        {"type": "text", "text": "look at this screenshot"}]},
     "user: image 1024x768 (765 tokens) + 'look at this screenshot'"),
    ("anthropic", {"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": png(1024, 768)}},
        {"type": "text", "text": "look at this screenshot"}]},
     "user: image 1024x768 (1049 tokens) + 'look at this screenshot'"),
    ("anthropic", {"role": "assistant", "content": [THINKING, READ]},
     "assistant: thinking (212 tokens) + read(a.py)"),
    ("anthropic", {"role": "assistant", "content": [
        {"type": "redacted_thinking", "data": "x" * 400}, READ]},
     "assistant: redacted thinking (76 tokens) + read(a.py)"),
    # `display: "omitted"`: no text, the whole thinking in the signature (3/4 of a byte a
    # character, about 4 bytes a token)
    ("anthropic", {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "", "signature": "A" * 1600}, READ]},
     "assistant: thinking (300 tokens) + read(a.py)"),
    # reasoning sent back on a Chat Completions turn: DeepSeek's text; OpenRouter's text twice
    # (in `reasoning` and its details) counted once, its encrypted details by their size
    ("openai", {"role": "assistant", "content": "done",
                "reasoning_content": " ".join(["why"] * 40)},
     "assistant: reasoning (40 tokens) + 'done'"),
    # one token is said as one ("reasoning (1 tokens)" read in audits)
    ("openai", {"role": "assistant", "content": "done", "reasoning_content": "why"},
     "assistant: reasoning (1 token) + 'done'"),
    ("openai", {"role": "assistant", "content": "done", "reasoning": " ".join(["why"] * 40),
                "reasoning_details": [
                    {"type": "reasoning.text", "text": " ".join(["why"] * 40),
                     "signature": "A" * 80},
                    {"type": "reasoning.encrypted", "data": "B" * 1600}]},
     "assistant: reasoning (340 tokens) + 'done'"),
    ("openai", {"role": "user", "content": [
        {"type": "file", "file": {"filename": "report.pdf", "file_data": "JVBERi0="}},
        {"type": "text", "text": "summarize it"}]},
     "user: file report.pdf (3000 tokens) + 'summarize it'"),
    ("openai", {"role": "user", "content": [{"type": "input_audio", "input_audio": {
        "data": base64.b64encode(b"\x00" * 64000).decode(), "format": "wav"}}]},
     "user: audio (21 tokens)"),  # 64 kB of base64 padding: just over 2 s
]


@pytest.mark.parametrize(("fmt", "native", "line"), CASES, ids=[c[2][:30] for c in CASES])
def test_a_line_names_the_parts(fmt, native, line):
    (msg,) = decode(fmt, {"messages": [native]}, WORDS).messages  # type: ignore[arg-type]
    assert describe(msg) == line


SEALED = "A" * 1600  # about 300 tokens sealed (3/4 of a byte a character, 4 bytes a token)
RESPONSES = [
    ([{"role": "user", "content": [
        {"type": "input_image", "image_url": "data:image/png;base64," + png(1024, 768)},
        {"type": "input_text", "text": "look at this screenshot"}]}],
     "user: image 1024x768 (765 tokens) + 'look at this screenshot'"),
    ([{"role": "user", "content": "read it"},
      {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": SEALED},
      {"type": "function_call", "call_id": "c1", "name": "read",
       "arguments": '{"path": "a.py"}'}],
     "assistant: reasoning (300 tokens) + read(a.py)"),
    ([{"type": "compaction", "encrypted_content": SEALED}], "assistant: compaction (301 tokens)"),
    ([{"type": "function_call", "call_id": "c1", "name": "shot", "arguments": "{}"},
      {"type": "computer_call_output", "call_id": "c1", "output": {
          "type": "computer_screenshot", "image_url": "data:image/png;base64," + png(1024, 768)}}],
     "tool result of c1: image 1024x768 (765 tokens)"),
    ([{"type": "web_search_call", "id": "ws_1", "status": "completed"}],
     "assistant: web_search_call (1 token)"),  # its JSON, one word to this counter
]


@pytest.mark.parametrize(("items", "line"), RESPONSES, ids=[c[1][:30] for c in RESPONSES])
def test_a_responses_line_names_the_parts(items, line):
    """The Responses API's parts and items, named as the other formats name theirs (the
    reasoning of the turn under way, read again: costed by what it seals)."""
    msgs = decode("responses", {"model": "gpt-5.4", "input": items}, WORDS).messages
    assert describe(msgs[-1]) == line


def test_plain_text_and_calls_without_parts():
    assert describe(Message(role="user", content="Fix the parser\nplease")) == \
        "user (2 lines): Fix the parser"
    call = Message(role="assistant", content="", tool_calls=[
        ToolCall(id="c", name="grep", arguments='{"pattern": "TODO", "path": "src"}')])
    assert describe(call) == "assistant: grep(TODO, src)"
    counted = Message(role="user", content="see", parts_tokens=85)
    assert describe(counted) == "user: parts (85 tokens) + 'see'"


def test_a_line_stays_short():
    long = Message(role="assistant", content="x " * 500, parts=["thinking (9000 tokens)"],
                   tool_calls=[ToolCall(id="c", name="write", arguments='{"text": "' +
                                        "y" * 500 + '"}')])
    assert len(describe(long)) < 140


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["a", "b c", " ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c",
                                 "\x1c", "\x85", "\u2028", "\u2029", "é", "x" * 90]),
                max_size=30).map("".join))
def test_lines_of_gives_what_split_lines_gives(text):
    """An audit line reads only the first lines of a text, one by one: the lines that say
    something are those split_lines gives (empty ones may differ in number: "\r\n"), and
    the line it shows the same."""
    assert [ln for ln in lines_of(text) if ln.strip()] == [
        ln for ln in split_lines(text) if ln.strip()]
    first = next((ln.strip() for ln in split_lines(text) if ln.strip()), None)
    shown = one_line(text, 80)
    assert shown == ("(empty)" if first is None else
                     first if len(first) <= 80 else first[:79] + "…")


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=20))
def test_a_path_shows_as_one_line_that_reads_back_as_it_was(path):
    shown = path_line(path)
    assert "\n" not in shown and "\r" not in shown and shown == shown.strip(" ")
    assert (ast.literal_eval(shown) if shown != path else shown) == path
    assert shown.isprintable()  # nothing invisible inside but spaces
    if (path.isprintable() and path == path.strip(" ") and not path.startswith('"')
            and not reads_as_markdown(path)):
        assert shown == path  # a plain name is left as it is
    if reads_as_markdown(path):  # '# Git' would read as a section of the segment
        assert shown.startswith('"')


def test_a_file_names_bytes_that_are_not_utf8_are_written_as_escapes():
    name = b"caf\xe9-\xff.py".decode("utf-8", "surrogateescape")  # as os.listdir gives it
    assert sound(name) == "caf\\xe9-\\xff.py" and sound("café.py") == "café.py"
    assert sound("lone \ud800 high") == "lone \\ud800 high"
    assert path_line(name) == '"caf\\xe9-\\xff.py"'
    for text in (sound(name), path_line(name)):
        text.encode("utf-8")  # what JSON and the tokenizer need
