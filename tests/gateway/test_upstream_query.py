"""The client's query string goes upstream on every route, as it was sent: Azure OpenAI needs
its `api-version`, and the Anthropic SDK's beta client asked `?beta=true` (up to its 2.x
releases; a client may still set it as its default query)."""

from __future__ import annotations

import httpx2 as httpx
import pytest

#: an Azure-style version and a value whose `&` and space stay percent-encoded on the way
QUERY = "api-version=2024-10-21&note=a%26b%20c"


def test_the_openai_sdk_default_query_reaches_the_upstream(stack):
    client = stack.openai(default_query={"api-version": "2024-10-21"})
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    client.responses.create(model="gpt-4o", input="hi")
    seen = {r["path"]: r["query"] for r in stack.standin.requests()}
    assert seen == {"/v1/chat/completions": "api-version=2024-10-21",
                    "/v1/responses": "api-version=2024-10-21"}


def test_the_anthropic_sdk_default_query_reaches_the_upstream(stack):
    client = stack.anthropic(default_query={"beta": "true"})
    messages = [{"role": "user", "content": "hi"}]
    client.beta.messages.create(model="claude-sonnet-4", max_tokens=20, messages=messages)
    client.beta.messages.count_tokens(model="claude-sonnet-4", messages=messages)
    seen = [(r["path"], r["query"]) for r in stack.standin.requests()]
    assert seen == [("/v1/messages", "beta=true"), ("/v1/messages/count_tokens", "beta=true")]


@pytest.mark.parametrize("path, body", [
    ("/v1/chat/completions", {"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]}),
    ("/v1/responses", {"model": "gpt-4o", "input": "q"}),
    ("/v1/messages", {"model": "claude-sonnet-4", "max_tokens": 20,
                      "messages": [{"role": "user", "content": "q"}]}),
    ("/v1/messages/count_tokens", {"model": "claude-sonnet-4",
                                   "messages": [{"role": "user", "content": "q"}]}),
    ("/v1/embeddings", {"model": "gpt-4o", "input": "q"}),
])
def test_a_query_goes_upstream_unchanged_on_every_route(stack, path, body):
    headers = {"anthropic-version": "2023-06-01"} if path.startswith("/v1/messages") else {}
    answer = httpx.post(f"{stack.anthropic_url}{path}?{QUERY}", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    (seen,) = stack.standin.requests()
    assert (seen["path"], seen["query"]) == (path, QUERY)
