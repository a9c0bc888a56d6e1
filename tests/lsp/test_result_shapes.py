"""What PROTOCOL.md says of ctx/prepare's params and of every result's fields, over the real
daemon on stdio: the default format is ctxlayer's, and a documented field is on the wire
also when it is empty, 0 or null (a client reading it got a KeyError)."""

from __future__ import annotations

import pytest
from conftest import RawDaemon

pytestmark = pytest.mark.e2e


async def test_prepare_without_a_format_reads_ctxlayer_messages(raw_daemon: RawDaemon):
    """It read them as OpenAI's: a field the ctxlayer Message has not went through unseen,
    where ctx/trim and ctx/count, given the same messages, refuse it naming it."""
    sent = [{"role": "user", "content": "hi", "colour": 1}]
    for n, method in enumerate(("ctx/prepare", "ctx/trim", "ctx/count")):
        params = {"request": {"model": "gpt-4o", "messages": sent}} if n == 0 else {
            "messages": sent}
        out = await raw_daemon.request(n + 1, method, params)
        assert out.get("error", {}).get("code") == -32602, (method, out)
        assert "colour" in out["error"]["message"], out
    fitted = await raw_daemon.request(9, "ctx/prepare", {"request": {
        "model": "gpt-4o", "messages": [{"role": "user", "content": "hi", "pinned": True}]}})
    kept = fitted["result"]["request"]["messages"]
    assert kept[-1]["content"] == "hi" and kept[-1]["pinned"] is True, fitted


async def test_documented_result_fields_are_there_when_empty(raw_daemon: RawDaemon):
    """ctx/prepare left out `cacheBreakpoints` and `notice` when there were none, a Budget's
    `byLayer` and ctx/assemble's `tokens` a layer of 0 tokens, ctx/trim and ctx/conversations
    a `percent` of 0: each documented, and a client reading it got a KeyError."""
    big = 10**9  # a budget so large that the percentages round to 0.0
    request = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    out = (await raw_daemon.request(1, "ctx/prepare", {"format": "openai", "budget": big,
                                                       "request": request}))["result"]
    assert out["cacheBreakpoints"] == [] and out["notice"] is None, out
    for field in ("dropped", "truncated", "compacted", "cacheReuseTokens", "tokens", "budget",
                  "conversationId", "sessionId", "request"):
        assert field in out, field

    chats = (await raw_daemon.request(2, "ctx/conversations", {}))["result"]["conversations"]
    ours = [c for c in chats if c["conversationId"] == out["conversationId"]]
    assert [c["percent"] for c in ours] == [0.0], chats

    trimmed = (await raw_daemon.request(3, "ctx/trim", {
        "messages": [{"role": "user", "content": "hi"}], "budget": big}))["result"]
    assert trimmed["percent"] == 0.0, trimmed

    layers = {"system", "workspace", "rules", "working", "history"}
    await raw_daemon.request(4, "ctx/session/open", {"sessionId": "shapes"})
    budget = (await raw_daemon.request(5, "ctx/session/append", {"sessionId": "shapes",
              "messages": [{"role": "user", "content": "hi"}]}))["result"]
    assert set(budget["byLayer"]) == layers and budget["byLayer"]["rules"] == 0, budget
    assembled = (await raw_daemon.request(6, "ctx/assemble", {"sessionId": "shapes"}))["result"]
    assert set(assembled["tokens"]) == {"total", *layers}, assembled["tokens"]
    assert assembled["tokens"]["rules"] == 0 and assembled["tokens"]["working"] == 0
