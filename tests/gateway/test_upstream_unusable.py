"""An upstream URL that cannot be used (`localhost:11434/v1`, no scheme; `http://[::1:8080`, an
unclosed bracket) is kept as written and every request for it refused with a 502 in the
provider's shape naming the setting. Before, the settings put the provider's default in its
place with one message in the log: a chat meant for a local model went to api.openai.com with
its key; and the unclosed bracket raised out of the settings' own message (`said`)."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx2 as httpx
import msgspec
import pytest
from gateway_stack import start_stack, stop_stack
from providers.standin import StandinThread

from ctxlayer.config import load_config
from ctxlayer.urls import carries_credentials, named, said

NO_SCHEME = "localhost:11434/v1"
UNCLOSED = "http://key:sk-SECRET@[::1:8080"


@pytest.fixture
def unusable(world, caplog):
    """A gateway whose upstreams are the two URLs as the user's ctxlayer.toml gives them,
    restarted with them so that its startup is logged too."""
    user = world / "user-config"
    user.mkdir()
    (user / "ctxlayer.toml").write_text(
        f'[gateway]\nopenai_base_url = "{NO_SCHEME}"\nanthropic_base_url = "{UNCLOSED}"\n')
    config, problems = load_config(world / "workspace", user, None)
    with StandinThread() as thread:
        gateway, state = start_stack(thread, world / "workspace", world / "state-unusable")
        gateway.config = msgspec.structs.replace(
            gateway.config, openai_base_url=config.gateway.openai_base_url,
            anthropic_base_url=config.gateway.anthropic_base_url)

        async def restart() -> None:
            await gateway.close()
            await gateway.start()

        try:
            with caplog.at_level(logging.DEBUG, logger="ctxlayer"):
                thread.call(restart())
                yield thread, gateway, problems
        finally:
            stop_stack(thread, gateway, state)


def test_an_unusable_upstream_url_is_refused_never_replaced_by_the_default(unusable, caplog):
    thread, gateway, problems = unusable
    assert [p.split("`")[1] for p in problems] == ["gateway.openai_base_url",
                                                    "gateway.anthropic_base_url"], problems
    assert all("refuses its requests until it is fixed" in p for p in problems), problems
    assert "SECRET" not in "".join(problems)
    asked = [
        ("POST", f"{gateway.urls.openai}/chat/completions",
         {"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]},
         {"authorization": "Bearer sk-client"}, "openai_base_url"),
        ("POST", f"{gateway.urls.openai}/responses", {"model": "gpt-4o", "input": "q"},
         {"authorization": "Bearer sk-client"}, "openai_base_url"),
        ("GET", f"{gateway.urls.openai}/models", None, {"authorization": "Bearer sk-client"},
         "openai_base_url"),
        ("POST", f"{gateway.urls.anthropic}/v1/messages",
         {"model": "claude-sonnet-4", "max_tokens": 5,
          "messages": [{"role": "user", "content": "q"}]},
         {"x-api-key": "sk-ant-client", "anthropic-version": "2023-06-01"},
         "anthropic_base_url"),
    ]
    for method, url, body, headers, setting in asked:
        answer = httpx.request(method, url, json=body, headers=headers, timeout=30)
        assert answer.status_code == 502, (url, answer.text)
        said_back = answer.json()["error"]
        assert f"[gateway] {setting}" in said_back["message"], said_back
        assert "nor to the default in its place" in said_back["message"], said_back
        assert "SECRET" not in answer.text
        if setting == "openai_base_url":
            assert said_back["code"] == "unusable_upstream_url", said_back
        else:
            assert answer.json()["type"] == "error" and said_back["type"] == "api_error"
    assert thread.requests() == []
    logged = "\n".join(r.getMessage() for phase in ("setup", "call")
                       for r in caplog.get_records(phase))
    assert f"[gateway] openai_base_url '{NO_SCHEME}'" in logged
    assert "[gateway] anthropic_base_url" in logged and "SECRET" not in logged


def test_an_unparsable_url_is_said_without_its_key(tmp_path: Path):
    assert said(UNCLOSED) == named(UNCLOSED) == "http://[::1:8080"
    assert carries_credentials(UNCLOSED)
    assert said("http://[::1:8080/v1?key=sk-q") == "http://[::1:8080/v1"
