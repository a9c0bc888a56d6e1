"""The params of a ctx/* request refuse a field they do not declare (-32602, the message and
`data.field` naming it), but for the progress tokens any LSP client may add to a request.
Before, an unknown field was dropped unread: ctx/count given ctx/prepare's shape,
`{request: body}`, answered {"tokens": [], "total": 0}. The real daemon over stdio."""

from __future__ import annotations

import pytest
from conftest import RawDaemon, ask, result

from ctxlayer import protocol

pytestmark = pytest.mark.e2e


async def refused(daemon: RawDaemon, method: str, params: dict, field: str) -> str:
    """The message of the -32602 that names `field`."""
    out = await ask(daemon, method, params)
    assert out.get("error", {}).get("code") == -32602, (method, out)
    assert out["error"]["data"]["field"] == field, (method, out)
    assert field in out["error"]["message"], (method, out)
    return out["error"]["message"]


async def test_every_request_refuses_a_field_it_does_not_take(raw_daemon: RawDaemon):
    for method in protocol.REQUESTS:
        await refused(raw_daemon, method, {"colour": "blue"}, "colour")


async def test_a_field_of_another_request_is_named_with_what_this_one_takes(
        raw_daemon: RawDaemon):
    body = {"model": "claude-sonnet-4-5", "system": "x",
            "messages": [{"role": "user", "content": "hello " * 500}]}
    message = await refused(raw_daemon, "ctx/count", {"format": "anthropic", "request": body},
                            "request")
    assert "texts, messages" in message, message


async def test_a_nested_field_is_named_where_it_is(own_daemon: RawDaemon):
    await result(own_daemon, "ctx/session/open", {"sessionId": "s"})
    await refused(own_daemon, "ctx/assemble", {
        "sessionId": "s", "systemPrompt": {"interactive": True, "idenity": "a bot"}},
        "systemPrompt.idenity")
    await refused(own_daemon, "ctx/systemPrompt", {"dynamic": {"contextCommand": "ls"}},
                  "dynamic.contextCommand")


async def test_what_lsp_clients_add_to_any_request_is_taken(raw_daemon: RawDaemon):
    plain = await result(raw_daemon, "ctx/count", {"texts": ["hello world"]})
    tokens = {"workDoneToken": "w-1", "partialResultToken": 7}
    assert await result(raw_daemon, "ctx/count", {"texts": ["hello world"], **tokens}) == plain
    listed = await result(raw_daemon, "ctx/session/list", tokens)
    assert "sessions" in listed
