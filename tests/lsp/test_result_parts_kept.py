"""A tool result of several text parts that is shortened keeps each part's own fields, and a
part whose words were all left out is named in the audit, in each provider format, through
ctx/prepare and ctx/trim on the real daemon over stdio.

Before: the parts' texts were joined, shortened, and written back as one part: an OpenAI
`role: tool` message of three text parts came back with one, its second and third parts'
fields (`x_second`, ...) gone, an Anthropic tool_result's likewise, and the audit said only
that the result was outlined."""

from __future__ import annotations

import pytest
from conftest import result

pytestmark = pytest.mark.e2e


def _lines(tag: str, n: int) -> str:
    return "\n".join(f"{tag} {i}: the {tag} part says something about its item {i}"
                     for i in range(n))


FIRST, MIDDLE, LAST = _lines("head", 300), _lines("middle", 200), _lines("tail", 300)


def _parts(text_type: str) -> list[dict]:
    return [{"type": text_type, "text": FIRST, "x_first": 1},
            {"type": text_type, "text": MIDDLE, "x_middle": 2},
            {"type": text_type, "text": LAST, "x_second": 3}]


CALL = [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]
REQUESTS = {
    "openai": {"model": "gpt-4o", "messages": [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": None, "tool_calls": CALL},
        {"role": "tool", "tool_call_id": "c1", "content": _parts("text")},
        {"role": "user", "content": "what did it say?"}]},
    "anthropic": {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "read",
                                           "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
                                      "content": _parts("text")}]},
        {"role": "user", "content": "what did it say?"}]},
    "responses": {"model": "gpt-4o", "input": [
        {"type": "message", "role": "user", "content": "read it"},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": _parts("input_text")},
        {"type": "message", "role": "user", "content": "what did it say?"}]},
}


def _result_parts(fmt: str, sent: list) -> list[dict]:
    """The text parts of the tool result in a request as it goes."""
    if fmt == "openai":
        return sent[2]["content"]
    if fmt == "anthropic":
        return sent[2]["content"][0]["content"]
    return sent[2]["output"]


def _check(fmt: str, parts: list[dict], audit: list[dict]) -> None:
    # the first and the last part stay, each with its own field and its own end of the text
    assert [{k: v for k, v in p.items() if k != "text"} for p in parts] == [
        {"type": parts[0]["type"], "x_first": 1}, {"type": parts[0]["type"], "x_second": 3}], parts
    assert parts[0]["text"].startswith("head 0:") and "lines omitted" in parts[0]["text"]
    assert parts[1]["text"].endswith(LAST.rsplit("\n", 1)[1]) and "head" not in parts[1]["text"]
    # the middle one held only words the outline left out: it went, and the audit says so
    [gone] = [e for e in audit if "part 2 of 3 (text)" in e["summary"]]
    assert gone["action"] == "dropped" and "x_middle" in gone["reason"], gone
    assert gone["messageId"], gone


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "responses"])
async def test_prepare_keeps_each_parts_fields(own_daemon, fmt):
    key = "input" if fmt == "responses" else "messages"
    prepared = await result(own_daemon, "ctx/prepare", {
        "format": fmt, "conversationId": f"parts-{fmt}", "request": REQUESTS[fmt],
        "budget": 1500})
    _check(fmt, _result_parts(fmt, prepared["request"][key]), prepared["dropped"])
    [gone] = [e for e in prepared["dropped"] if "(text)" in e["summary"]]
    why = await result(own_daemon, "ctx/why", {"conversationId": f"parts-{fmt}",
                                               "messageId": gone["messageId"]})
    assert gone in why["entries"], why


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "responses"])
async def test_trim_keeps_each_parts_fields(own_daemon, fmt):
    request_ = REQUESTS[fmt]
    key = "input" if fmt == "responses" else "messages"
    trimmed = await result(own_daemon, "ctx/trim", {
        "format": fmt, "messages": request_[key], "model": request_["model"],
        "budget": 1500})
    _check(fmt, _result_parts(fmt, trimmed["messages"]), trimmed["dropped"])
