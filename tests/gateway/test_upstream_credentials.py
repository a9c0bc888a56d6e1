"""An upstream base URL with a user and password in it (`http://alice:sk-...@host/v1`) is
never used and never said: every request for it is a 502 in the provider's shape that says to
put the key in the client's header, and the password appears in no log line and no answer.
Before, every request with an Authorization header got aiohttp's bare text/plain 500, the
startup log said the whole URL, and the 502 / 504 bodies echoed it."""

from __future__ import annotations

import logging

import httpx2 as httpx
import msgspec
import pytest
from gateway_stack import start_stack, stop_stack
from providers.standin import StandinThread

from ctxlayer.urls import carries_credentials, named

SECRET = "sk-SECRET-in-the-url"


@pytest.fixture
def with_credentials(world, caplog):
    """A gateway whose upstreams are the stand-in's, each URL carrying a user and SECRET,
    restarted with them so that its startup is logged too."""
    with StandinThread() as thread:
        gateway, state = start_stack(thread, world / "workspace", world / "state-credentials")
        standin = thread.standin
        gateway.config = msgspec.structs.replace(
            gateway.config,
            openai_base_url=standin.openai.replace("http://", f"http://alice:{SECRET}@"),
            anthropic_base_url=standin.anthropic.replace("http://", f"http://alice:{SECRET}@"))

        async def restart() -> None:
            await gateway.close()
            await gateway.start()

        try:
            with caplog.at_level(logging.DEBUG, logger="ctxlayer"):
                thread.call(restart())
                yield thread, gateway
        finally:
            stop_stack(thread, gateway, state)


OPENAI_KEY = {"authorization": "Bearer sk-client"}
ANTHROPIC_KEY = {"x-api-key": "sk-ant-client", "anthropic-version": "2023-06-01"}
CHAT = {"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]}
MESSAGES = {"model": "claude-sonnet-4", "max_tokens": 5,
            "messages": [{"role": "user", "content": "q"}]}


def test_credentials_in_a_base_url_are_refused_and_never_said(with_credentials, caplog):
    thread, gateway = with_credentials
    asked = [
        ("POST", f"{gateway.urls.openai}/chat/completions?api-version=1", CHAT, OPENAI_KEY),
        ("POST", f"{gateway.urls.openai}/responses", {"model": "gpt-4o", "input": "q"},
         OPENAI_KEY),
        ("GET", f"{gateway.urls.openai}/models", None, OPENAI_KEY),
        ("POST", f"{gateway.urls.anthropic}/v1/messages", MESSAGES, ANTHROPIC_KEY),
        ("POST", f"{gateway.urls.anthropic}/v1/messages/count_tokens", MESSAGES, ANTHROPIC_KEY),
        # Claude Code signed in sends a bearer token: the case aiohttp refused with a 500
        ("POST", f"{gateway.urls.anthropic}/v1/messages", MESSAGES,
         {**ANTHROPIC_KEY, "authorization": "Bearer sk-ant-oauth"}),
    ]
    for method, url, body, headers in asked:
        answer = httpx.request(method, url, json=body, headers=headers)
        assert answer.status_code == 502, (url, answer.text)
        assert SECRET not in answer.text and "alice" not in answer.text
        said = answer.json()["error"]
        setting = "anthropic_base_url" if "x-api-key" in headers else "openai_base_url"
        assert f"[gateway] {setting} has a user and password" in said["message"], said
        assert "Authorization" in said["message"]
        if "x-api-key" in headers:
            assert answer.json()["type"] == "error" and said["type"] == "api_error"
        else:
            assert said["code"] == "credentials_in_upstream_url"
    assert thread.requests() == []  # nothing went upstream, with or without the password
    logged = "\n".join(r.getMessage() for phase in ("setup", "call")
                       for r in caplog.get_records(phase))
    assert f"upstream {thread.standin.openai}: through no proxy" in logged
    assert "[gateway] openai_base_url has a user and password" in logged
    assert SECRET not in logged and "alice" not in logged


def test_an_upstream_url_is_named_without_user_password_or_query():
    assert named("http://alice:pw@[::1]:8080/v1/chat/completions?key=k") == \
        "http://[::1]:8080/v1/chat/completions"
    assert named("http://user:secret@proxy.corp:3128") == "http://proxy.corp:3128"
    assert named("https://api.openai.com/v1") == "https://api.openai.com/v1"
    assert carries_credentials("http://alice@host/v1")
    assert not carries_credentials("https://api.openai.com/v1/users/@me")


def test_an_unreachable_upstream_is_named_without_the_clients_query(world):
    """The query goes upstream (an Azure key may ride there), not into the 502 or the log."""
    with StandinThread() as thread:
        gateway, state = start_stack(thread, world / "workspace", world / "state-query")
        try:
            gateway.config = msgspec.structs.replace(
                gateway.config, openai_base_url="http://127.0.0.1:9/v1")  # nobody listens
            answer = httpx.post(f"{gateway.urls.openai}/chat/completions?api-key=sk-q-SECRET",
                                json=CHAT)
        finally:
            stop_stack(thread, gateway, state)
    assert answer.status_code == 502
    assert "cannot reach the upstream http://127.0.0.1:9/v1/chat/completions" in answer.text
    assert "sk-q-SECRET" not in answer.text
