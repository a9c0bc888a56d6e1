"""What aiohttp answers by itself (a handler's unexpected exception, its timeout, a 404 or a
417 raised before any route) comes out in the provider's JSON error shape, chosen by the path
the client called, so that the official SDKs raise their typed errors with the gateway's
message. aiohttp's own were text/plain: the OpenAI SDK said "Error code: 500 - '500 Internal
Server Error\\n\\nServer got itself in trouble'", and of a 504 nothing but its status."""

from __future__ import annotations

import json
import socket

import anthropic
import openai
import pytest

ASK = [{"role": "user", "content": "hello"}]


def _failing(exc: BaseException):
    async def relay(*args, **kwargs):
        raise exc
    return relay


@pytest.fixture(params=["bug", "timeout"])
def failure(request, stack, monkeypatch):
    """The relay fails as a bug of ours does (500), or with a timeout no one caught (504)."""
    exc = RuntimeError("a bug") if request.param == "bug" else TimeoutError()
    monkeypatch.setattr(stack.gateway.upstream, "relay", _failing(exc))
    return 500 if request.param == "bug" else 504


def test_the_openai_sdk_raises_its_typed_error_with_the_gateways_message(stack, failure):
    with pytest.raises(openai.InternalServerError) as raised:
        stack.openai().chat.completions.create(model="gpt-4o", messages=ASK)
    assert raised.value.status_code == failure
    assert raised.value.response.headers["content-type"].startswith("application/json")
    error = raised.value.body
    assert set(error) == {"message", "type", "param", "code"}, error
    assert error["type"] == "server_error"
    assert error["message"].startswith("ctxlayer gateway: the gateway ")
    assert error["message"] in str(raised.value)


def test_the_anthropic_sdk_raises_its_typed_error_with_the_gateways_message(stack, failure):
    kind = anthropic.InternalServerError
    with pytest.raises(kind) as raised:
        stack.anthropic().messages.create(model="claude-sonnet-4-5", max_tokens=16,
                                          messages=ASK)
    assert raised.value.status_code == failure
    body = raised.value.body
    assert body["type"] == "error", body
    assert body["error"]["type"] == ("api_error" if failure == 500 else "timeout_error")
    assert body["error"]["message"].startswith("ctxlayer gateway: the gateway ")
    assert body["error"]["message"] in str(raised.value)


def test_a_responses_request_gets_openais_shape(stack, failure):
    with pytest.raises(openai.InternalServerError) as raised:
        stack.openai().responses.create(model="gpt-4o", input="hello")
    assert raised.value.status_code == failure
    assert raised.value.body["message"].startswith("ctxlayer gateway: ")


def _raw(port: int, head: str) -> tuple[str, dict]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head.encode())
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    head_said, _, body = answer.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head_said.lower(), answer
    return head_said.decode().split("\r\n")[0], json.loads(body)


def test_a_target_that_is_no_path_is_a_json_404(stack):
    port = stack.gateway.port
    status, said = _raw(port, f"OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                              "Connection: close\r\n\r\n")
    assert status == "HTTP/1.1 404 Not Found"
    assert said["error"]["code"] == "not_found"
    assert said["error"]["message"].startswith("ctxlayer gateway: Not Found (OPTIONS ")


def test_an_expectation_aiohttp_does_not_know_is_a_json_417_in_the_paths_shape(stack):
    port = stack.gateway.port
    for path, anthropic_shape in (("/v1/messages", True), ("/v1/chat/completions", False)):
        status, said = _raw(port, f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                                  "Expect: 200-ok\r\nContent-Length: 2\r\n"
                                  "Connection: close\r\n\r\n{}")
        assert status == "HTTP/1.1 417 Expectation Failed"
        assert ("type" in said and said["type"] == "error") is anthropic_shape, said
        assert "Unknown Expect" in said["error"]["message"]
    assert stack.model_requests() == []  # never forwarded
