"""The headers that are for one hop alone never cross the gateway, either way: those a
message's `Connection` header names (RFC 9110 section 7.6.1), and cookies (no provider API
uses them; a browser sends the gateway every cookie of `localhost`, another local app's
session among them). Before, `Connection: keep-alive, x-hop` sent x-hop on to the upstream,
the client's Cookie went with its key, and the upstream's Set-Cookie and the headers its own
Connection named came back, on every route, streamed or not."""

from __future__ import annotations

import httpx2 as httpx
import pytest
from gateway_stack import Stack, fresh_stack, start_stack, stop_stack
from providers.standin import StandinThread

QUESTION = [{"role": "user", "content": "What does the project do?"}]
ANTHROPIC = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
OPENAI = {"authorization": "Bearer sk-test"}
ROUTES = {
    "messages": ("/v1/messages", ANTHROPIC, {"model": "claude-sonnet-4", "max_tokens": 20,
                                             "messages": QUESTION}),
    "chat": ("/v1/chat/completions", OPENAI, {"model": "gpt-4o", "messages": QUESTION}),
    "responses": ("/v1/responses", OPENAI, {"model": "gpt-4o", "input": "What is it?"}),
}
#: what the stand-in's answers carry: a header for its hop alone, a cookie, an end-to-end one
THEIRS = {"Connection": "X-Up-Hop", "X-Up-Hop": "1", "Set-Cookie": "cdn=1; Path=/",
          "X-Upstream-Kept": "1"}


@pytest.fixture(scope="module")
def hops(tmp_path_factory):
    with fresh_stack(tmp_path_factory.mktemp("hops"), headers=THEIRS) as stack:
        yield stack


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", ROUTES)
def test_connection_named_headers_and_cookies_stop_at_the_gateway(hops, api, stream):
    path, keys, body = ROUTES[api]
    hops.standin.reset()
    answer = httpx.post(f"{hops.anthropic_url}{path}", json={**body, "stream": stream},
                        timeout=30, headers={
                            **keys, "Connection": "keep-alive, X-Hop , x-other-hop",
                            "X-Hop": "1", "x-other-hop": "2", "Cookie": "other-app=secret",
                            "X-Client-Kept": "1"})
    assert answer.status_code == 200, answer.text
    (seen,) = hops.model_requests()
    sent = seen["headers"]
    assert "x-hop" not in sent and "x-other-hop" not in sent
    assert "cookie" not in sent
    assert sent["x-client-kept"] == "1"  # an end-to-end header still goes
    back = {k.lower() for k in answer.headers}
    assert "x-up-hop" not in back and "set-cookie" not in back
    assert answer.headers["x-upstream-kept"] == "1"
    assert "x-ctxlayer-tokens" in back


def test_a_passthrough_request_drops_them_too(hops):
    hops.standin.reset()
    answer = httpx.post(f"{hops.openai_url}/embeddings", json={"model": "gpt-4o", "input": "q"},
                        headers={**OPENAI, "Connection": "x-hop", "X-Hop": "1",
                                 "Cookie": "other-app=secret"})
    assert answer.status_code == 200, answer.text
    (seen,) = hops.standin.requests()
    assert "x-hop" not in seen["headers"] and "cookie" not in seen["headers"]
    assert "set-cookie" not in answer.headers and "x-up-hop" not in answer.headers


def test_a_cookie_one_answer_set_is_not_sent_with_the_next_request(tmp_path, monkeypatch):
    """The gateway's own HTTP client keeps no cookies: a cookie set in one client's answer
    (a CDN before the provider sets one) went with every later request of every client to
    that host. The upstream named `localhost`: a client keeps no cookie of an IP address."""
    for sub in ("ws", "state", "config"):
        (tmp_path / sub).mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with StandinThread(headers={"Set-Cookie": "cdn=1; Path=/"}) as thread:
        local = thread.standin.openai.replace("127.0.0.1", "localhost")
        gateway, state = start_stack(thread, tmp_path / "ws", tmp_path / "state",
                                     openai_base_url=local)
        try:
            for _ in range(2):
                answer = httpx.post(f"{gateway.urls.openai}/chat/completions", timeout=30,
                                    headers=OPENAI, json=ROUTES["chat"][2])
                assert answer.status_code == 200, answer.text
            first, second = Stack(thread, gateway, state).model_requests()
        finally:
            stop_stack(thread, gateway, state)
    assert "cookie" not in first["headers"] and "cookie" not in second["headers"]
