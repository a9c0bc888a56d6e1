"""ctx/trim's and ctx/prepare's `tokens` are of the messages they give back: ctx/count of those
says the same number, as `ctxlayer count` of `ctxlayer trim`'s output does (README). The
codec repairs a request after the fit, and the figure was the fit's, before the repairs: a
leading assistant turn dropped said 30 tokens for a request ctx/count said was 12; two user
turns merged into one, 25 for 23; a call left without its result removed, 28 for 19. The real
daemon over stdio."""

from __future__ import annotations

import pytest
from conftest import result

pytestmark = pytest.mark.e2e

CALL = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
#: (format, model, messages): each repaired by its codec, said in the audit
REPAIRED = {
    "two user turns in a row": ("anthropic", "claude-sonnet-4-5", [
        {"role": "user", "content": "first question about the build"},
        {"role": "user", "content": "second question: why does it fail?"}]),
    "a leading assistant turn": ("anthropic", "claude-sonnet-4-5", [
        {"role": "assistant", "content": "I am ready to help you with anything at all today."},
        {"role": "user", "content": "why does it fail?"}]),
    "a call without its result": ("openai", "gpt-4o", [
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "user", "content": "never mind, why does it fail?"}]),
}


async def _counted(daemon, fmt: str, model: str, messages: list, system=None) -> int:
    params = {"format": fmt, "model": model, "messages": messages}
    if system is not None:
        params["system"] = system
    return (await result(daemon, "ctx/count", params))["total"]


async def test_ctx_trim_says_the_tokens_of_the_messages_it_gives_back(own_daemon):
    for name, (fmt, model, messages) in REPAIRED.items():
        out = await result(own_daemon, "ctx/trim", {"format": fmt, "model": model,
                                                    "messages": messages, "budget": 1000})
        assert out["dropped"] or out["truncated"], (name, out)  # the codec repaired it
        counted = await _counted(own_daemon, fmt, model, out["messages"], out.get("system"))
        assert out["tokens"] == counted, (name, out)
        assert out["percent"] == round(100 * counted / 1000, 1), (name, out)


async def test_ctx_prepare_says_the_tokens_of_the_request_it_gives_back(own_daemon):
    for k, (name, (fmt, model, messages)) in enumerate(REPAIRED.items()):
        out = await result(own_daemon, "ctx/prepare", {
            "format": fmt, "conversationId": f"repaired-{k}",
            "request": {"model": model, "max_tokens": 100, "messages": messages}})
        sent = out["request"]
        assert out["dropped"] or out["truncated"], (name, out)
        counted = await _counted(own_daemon, fmt, model, sent["messages"], sent.get("system"))
        assert out["tokens"] == counted, (name, out)
