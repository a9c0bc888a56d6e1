"""In the ctxlayer format, a message ctx/prepare makes keeps its `ctx:` id and kind.

Before: the summary a prepared chat opened with was written `{"role": "user", "content":
"[Summary of 16 earlier messages, ...]"}`, its ids `[None, 'u16', ...]`, while PROTOCOL says
that messages the daemon creates get ids beginning with `ctx:` (ctx/assemble's summary is
`ctx:summary:15`, kind summary). The encoder stripped every field of a message the engine
added, so that a role-and-content body (`ctxlayer trim --doc`) may go to a provider as it is:
that still holds where the input's messages carry no id. The real daemon over stdio."""

from __future__ import annotations

import itertools

import pytest
from conftest import RawDaemon

pytestmark = pytest.mark.e2e
_ids = itertools.count()


def history(with_ids: bool) -> list[dict]:
    return [{**({"id": f"u{i}"} if with_ids else {}),
             "role": "user" if i % 2 == 0 else "assistant",
             "content": f"MSG{i} " + "lorem ipsum dolor " * 40} for i in range(21)]


async def prepared(daemon: RawDaemon, conversation: str, messages: list[dict]) -> list[dict]:
    out = await daemon.request(f"r{next(_ids)}", "ctx/prepare", {
        "format": "ctxlayer", "budget": 1200, "conversationId": conversation,
        "request": {"messages": messages}})
    assert "result" in out, out
    assert out["result"]["compacted"], out["result"]
    return out["result"]["request"]["messages"]


async def test_the_summary_of_a_prepared_chat_keeps_its_ctx_id_and_kind(own_daemon):
    messages = await prepared(own_daemon, "with-ids", history(with_ids=True))
    summary = messages[0]
    assert summary["id"].startswith("ctx:summary:") and summary["kind"] == "summary", summary
    assert [m["id"] for m in messages[1:]] == [f"u{i}" for i in range(21 - len(messages) + 1, 21)]
    why = await own_daemon.request("why", "ctx/why", {"conversationId": "with-ids",
                                                      "messageId": "u0"})
    assert why["result"]["entries"], why


async def test_a_plain_body_gets_no_field_it_did_not_have(own_daemon):
    messages = await prepared(own_daemon, "plain", history(with_ids=False))
    assert all(set(m) == {"role", "content"} for m in messages), messages[0]
