"""A model request sent to a path written oddly (a base URL ending in `/` joined to the route:
`/v1//chat/completions`; a trailing slash; an encoded one) is still a model request: it went
upstream as it came, unprepared and uncounted. A path with `..` segments (encoded too) never
leaves the upstream's `/v1`: `/v1/%2e%2e/x` reached the upstream's `/x`, with the client's key."""

from __future__ import annotations

import httpx2 as httpx
import pytest

CHAT = {"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]}
MESSAGES = {"model": "claude-sonnet-4", "max_tokens": 20,
            "messages": [{"role": "user", "content": "q"}]}
ANTHROPIC = {"anthropic-version": "2023-06-01"}


@pytest.mark.parametrize("path, body, headers, upstream", [
    ("/v1//chat/completions", CHAT, {}, "/v1/chat/completions"),
    ("/v1/chat/completions/", CHAT, {}, "/v1/chat/completions"),
    ("/v1/chat%2Fcompletions", CHAT, {}, "/v1/chat/completions"),
    ("/v1//messages", MESSAGES, ANTHROPIC, "/v1/messages"),
    ("/v1/responses/", {"model": "gpt-4o", "input": "q"}, {}, "/v1/responses"),
])
def test_a_model_request_on_an_odd_path_is_prepared(stack, path, body, headers, upstream):
    answer = httpx.post(f"{stack.anthropic_url}{path}", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    assert "x-ctxlayer-tokens" in answer.headers  # prepared and counted
    (seen,) = stack.standin.requests()
    assert seen["path"] == upstream


@pytest.mark.parametrize("path", ["/v1/%2e%2e/health", "/v1/..%2fhealth",
                                  "/v1/models/%2E%2E/%2E%2E/health"])
def test_a_path_that_would_leave_the_upstreams_v1_is_refused(stack, path):
    answer = httpx.get(f"{stack.anthropic_url}{path}", headers={"authorization": "Bearer k"})
    assert answer.status_code == 400
    assert "segments is not forwarded" in answer.json()["error"]["message"]
    assert stack.standin.requests() == []


def test_a_passthrough_path_goes_without_its_empty_segments(stack):
    answer = httpx.post(f"{stack.anthropic_url}/v1//embeddings",
                        json={"model": "gpt-4o", "input": "q"})
    assert answer.status_code == 200, answer.text
    (seen,) = stack.standin.requests()
    assert seen["path"] == "/v1/embeddings"
