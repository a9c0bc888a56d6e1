"""A ctx/prepare error names the field as the params hold it (`request.max_tokens`).

Before: an oversized `max_tokens` was said of `"field": "max_tokens"`, and an Anthropic
request with assistant turns only of `"field": "messages"`, while every other error of the
request said `request.messages`, `request.messages[0].content`: a client looking up the
field in its params found none. The gateway, whose body is the request, names the body's own
field (tests/gateway/test_gateway_bad_input.py). The real daemon over stdio."""

from __future__ import annotations

import pytest
from conftest import RawDaemon

pytestmark = pytest.mark.e2e

CASES = [
    ({"format": "openai", "request": {"model": "gpt-4o", "max_tokens": 10**9,
                                      "messages": [{"role": "user", "content": "hi"}]}},
     "request.max_tokens", "leave no room for the prompt"),
    ({"format": "anthropic", "request": {"model": "claude-sonnet-4", "max_tokens": 5,
                                         "messages": [{"role": "assistant", "content": "hi"}]}},
     "request.messages", "needs a user message first"),
    ({"format": "anthropic", "request": {"model": "claude-sonnet-4", "max_tokens": 5,
                                         "system": "s", "messages": []}},
     "request.messages", "needs at least one message"),
    ({"format": "openai", "request": {"model": "gpt-4o", "messages": "hi"}},
     "request.messages", "expected a list"),
]


@pytest.mark.parametrize("params,field,said", CASES)
async def test_a_prepare_error_names_the_field_from_the_params_root(raw_daemon: RawDaemon,
                                                                    params, field, said):
    out = await raw_daemon.request(1, "ctx/prepare", params)
    assert "error" in out, out
    error = out["error"]
    assert error["code"] == -32602 and error["data"]["field"] == field, error
    assert error["message"].startswith(f"{field}: ") and said in error["message"], error
