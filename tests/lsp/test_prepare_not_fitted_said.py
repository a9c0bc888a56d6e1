"""A Responses request whose history lives on the provider (`previous_response_id`) goes as it
came, its tokens past its budget: the result says so in its notice.

Before: `{"tokens": 3008, "budget": 1000, "notice": null}` with `dropped` and `truncated`
empty, the reason only in ctx/why: an editor reading the result showed an over-budget
request with nothing said. The real daemon over stdio."""

from __future__ import annotations

import pytest
from conftest import result

pytestmark = pytest.mark.e2e


async def test_a_request_sent_as_it_came_over_its_budget_says_why(own_daemon):
    request = {"model": "gpt-4.1", "previous_response_id": "resp_123",
               "input": [{"role": "user", "content": "big " * 3000}]}
    prepared = await result(own_daemon, "ctx/prepare", {
        "format": "responses", "conversationId": "kept-upstream", "request": request,
        "budget": 1000})
    assert prepared["request"] == request
    assert prepared["tokens"] > prepared["budget"]
    assert "previous_response_id" in (prepared["notice"] or ""), prepared
    why = await result(own_daemon, "ctx/why", {"conversationId": "kept-upstream"})
    assert any(e["action"] == "notFitted" for e in why["entries"]), why
