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


#: the methods the gateway does not handle itself on the paths of its own routes
OTHER_METHODS = [
    *[(method, path) for path in ("/v1/messages", "/v1/chat/completions", "/v1/responses",
                                  "/v1/messages/count_tokens", "/v1/models")
      for method in ("OPTIONS", "PUT", "DELETE", "PATCH")],
    *[(method, path) for path in ("/v1/messages", "/v1/responses", "/v1/messages/count_tokens")
      for method in ("GET", "HEAD")],
]


def _keys(path: str) -> dict[str, str]:
    return {"x-api-key": "sk-ant-k", **ANTHROPIC} if path.startswith("/v1/messages") \
        else {"authorization": "Bearer k"}


@pytest.mark.parametrize("method, path", OTHER_METHODS)
def test_another_method_on_a_served_path_goes_upstream_as_it_came(stack, method, path):
    """PROTOCOL.md: every other request under /v1 is forwarded unchanged, the answer the
    upstream's. A probe read the stand-in's text/plain 405 (aiohttp's, which its request list
    never showed) as the gateway's own; the stand-in now answers as a provider does."""
    answer = httpx.request(method, f"{stack.anthropic_url}{path}?q=1", headers=_keys(path))
    (seen,) = stack.standin.requests()
    assert (seen["method"], seen["path"], seen["query"]) == (method, path, "q=1")
    assert answer.status_code == seen["status"] == 405  # the stand-in's, relayed
    assert answer.headers["content-type"].startswith("application/json")
    assert "x-ctxlayer-tokens" not in answer.headers  # nothing prepared nor counted
    if method != "HEAD":
        said = answer.json()
        if path.startswith("/v1/messages"):
            assert said["type"] == "error"
        assert said["error"]["message"] == f"Invalid URL ({method} {path})"


@pytest.mark.parametrize("method, path", [("OPTIONS", "/v1/messages"),
                                          ("PUT", "/v1/responses"), ("GET", "/v1/messages")])
def test_another_method_from_a_web_page_is_refused_all_the_same(stack, method, path):
    answer = httpx.request(method, f"{stack.anthropic_url}{path}",
                           headers={**_keys(path), "Origin": "http://evil.example"})
    assert answer.status_code == 403
    assert answer.json()["error"]["message"].startswith("ctxlayer gateway: Origin")
    assert stack.standin.requests() == []


@pytest.mark.parametrize("path, headers", [
    ("/v1/models", {"authorization": "Bearer k"}),
    ("/v1/models", {"x-api-key": "sk-ant-k", **ANTHROPIC}),
    ("/v1//models", {"authorization": "Bearer k"}),
    ("/v1/models/gpt-4o", {"authorization": "Bearer k"}),
])
def test_a_head_goes_upstream_as_a_head(stack, path, headers):
    """aiohttp serves HEAD on a GET route: the list of models was asked of the upstream with
    a GET (its whole list read, then dropped). The client gets the headers a GET's answer
    has, its size among them, and no body."""
    got = httpx.get(f"{stack.anthropic_url}{path}", headers=headers)
    stack.standin.reset()
    answer = httpx.head(f"{stack.anthropic_url}{path}", headers=headers)
    (seen,) = stack.standin.requests()
    assert (seen["method"], seen["path"]) == ("HEAD", path.replace("//", "/"))
    assert answer.status_code == got.status_code == 200
    assert answer.content == b""
    assert answer.headers["content-type"] == got.headers["content-type"]
    assert answer.headers["content-length"] == str(len(got.content))


def test_a_head_on_health_is_answered_without_a_body(stack):
    got = httpx.get(f"{stack.anthropic_url}/health")
    answer = httpx.head(f"{stack.anthropic_url}/health")
    assert answer.status_code == got.status_code == 200 and answer.content == b""
    assert answer.headers["content-length"] == str(len(got.content))
    assert stack.standin.requests() == []
