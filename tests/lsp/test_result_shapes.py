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
