"""ctx/prepare of the same request sent again (a client's retry, an editor regenerating the
last answer) answers what the first answer said: the same `notice`, `dropped` and
`truncated`, and the whole result as reused. The audit log does not grow: the retry did
nothing new.

Before: the retry of a request that summarized 15 messages answered `notice: null` and empty
lists, as if nothing had been cut. The real daemon over stdio."""

from __future__ import annotations

import pytest
from conftest import RawDaemon, result

pytestmark = pytest.mark.e2e


def history() -> list[dict]:
    return [{"id": f"u{i}", "role": "user" if i % 2 == 0 else "assistant",
             "content": f"MSG{i} " + "lorem ipsum dolor " * 40} for i in range(21)]


async def prepared(daemon: RawDaemon) -> dict:
    return await result(daemon, "ctx/prepare", {
        "format": "ctxlayer", "budget": 1200, "conversationId": "retry",
        "request": {"messages": history()}})


async def test_a_cut_request_sent_again_says_again_what_was_cut(own_daemon):
    first = await prepared(own_daemon)
    assert first["notice"] and first["dropped"], first["notice"]
    audit = await result(own_daemon, "ctx/session/audit", {"sessionId": first["sessionId"]})
    again = await prepared(own_daemon)
    assert again["request"] == first["request"]
    assert again["notice"] == first["notice"]
    assert again["dropped"] == first["dropped"] and again["truncated"] == first["truncated"]
    assert again["compacted"] and again["tokens"] == first["tokens"]
    assert again["cacheReuseTokens"] > 0
    after = await result(own_daemon, "ctx/session/audit", {"sessionId": first["sessionId"]})
    assert after["entries"] == audit["entries"]
