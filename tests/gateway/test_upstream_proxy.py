"""A gateway started behind a company proxy (`HTTPS_PROXY` / `HTTP_PROXY`, `NO_PROXY`) reaches
its upstream through it, as the chat clients do; a loopback upstream never goes through one.
The proxy here is a real HTTP proxy on loopback that forwards to the stand-in, the upstream a
name only it resolves."""

from __future__ import annotations

import logging

import aiohttp
import msgspec
import openai
import pytest
from aiohttp import web
from gateway_stack import start_stack, stop_stack
from providers.standin import StandinThread

from ctxlayer.gateway.proxies import Proxies

#: an upstream no resolver knows: only the proxy reaches it (it forwards to the stand-in)
FAR = "http://provider.example"


class ForwardProxy:
    """An HTTP forward proxy: it takes absolute-form requests for FAR and makes them to the
    stand-in, recording what it was asked."""

    def __init__(self, standin_base: str) -> None:
        self.standin_base, self.seen = standin_base, []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append({"target": f"http://{request.host}{request.path_qs}",
                          "method": request.method,
                          "authorization": request.headers.get("Authorization"),
                          "proxy_authorization": request.headers.get("Proxy-Authorization")})
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() not in ("host", "proxy-authorization", "proxy-connection",
                                        "content-length", "transfer-encoding")}
        async with aiohttp.ClientSession(auto_decompress=False) as session, session.request(
                request.method, self.standin_base + request.rel_url.path_qs,
                data=await request.read(), headers=headers) as up:
            return web.Response(status=up.status, body=await up.read(), headers={
                "Content-Type": up.headers.get("Content-Type", "application/json")})


@pytest.fixture
def proxied(world, monkeypatch):
    """A gateway whose OpenAI upstream is FAR, started with HTTP_PROXY naming the proxy."""
    with StandinThread() as thread:
        proxy = ForwardProxy(thread.standin.openai.removesuffix("/v1"))

        async def start() -> tuple[web.AppRunner, int]:
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", proxy.handle)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            return runner, site._server.sockets[0].getsockname()[1]

        runner, port = thread.call(start())
        for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "no_proxy",
                     "http_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://user:secret@127.0.0.1:{port}")
        # as a user behind a proxy has it: the SDK reaches the gateway straight
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        gateway, state = start_stack(thread, world / "workspace", world / "state-proxied")
        gateway.config = msgspec.structs.replace(gateway.config, openai_base_url=FAR + "/v1")
        try:
            yield thread, gateway, proxy
        finally:
            stop_stack(thread, gateway, state)
            thread.call(runner.cleanup())


def test_the_upstream_is_reached_through_the_environments_proxy(proxied):
    thread, gateway, proxy = proxied
    client = openai.OpenAI(base_url=gateway.urls.openai, api_key="sk-through-the-proxy")
    answer = client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Say hi."}])
    assert answer.choices[0].message.content
    (seen,) = proxy.seen
    assert seen["target"] == FAR + "/v1/chat/completions" and seen["method"] == "POST"
    assert seen["authorization"] == "Bearer sk-through-the-proxy"  # the client's key, upstream
    assert seen["proxy_authorization"].startswith("Basic ")  # the proxy's own user, to it only
    (sent,) = thread.requests()
    assert sent["problems"] == [] and "proxy-authorization" not in sent["headers"]


def test_loopback_and_no_proxy_hosts_go_straight(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://user:secret@proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", "internal.corp,.lan")
    for name in ("https_proxy", "no_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY",
                 "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxies = Proxies()
    assert proxies.for_url("https://api.anthropic.com") == "http://user:secret@proxy.corp:3128"
    assert proxies.said("https://api.openai.com/v1") == "the proxy http://proxy.corp:3128"
    for straight in ("http://127.0.0.1:11434/v1", "http://localhost:8000/v1", "http://[::1]:9/v1",
                     "https://internal.corp/v1", "https://llm.lan/v1",
                     "http://api.openai.com/v1"):  # plain http: HTTP_PROXY, which is not set
        assert proxies.for_url(straight) is None, straight
        assert proxies.said(straight) == "no proxy"


def test_a_socks_proxy_is_named_and_not_used(monkeypatch):
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY",
                 "no_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ALL_PROXY", "socks5://user:secret@127.0.0.1:1080")
    proxies = Proxies()
    assert proxies.for_url("https://api.openai.com/v1") is None
    assert proxies.unusable == ["socks5://user:secret@127.0.0.1:1080"]


def test_the_log_names_the_proxy_without_its_password(proxied, caplog):
    thread, gateway, _proxy = proxied
    with caplog.at_level(logging.INFO, logger="ctxlayer.gateway"):
        async def restart() -> None:
            await gateway.close()
            await gateway.start()
        thread.call(restart())
    said = [r.getMessage() for r in caplog.records if "upstream" in r.getMessage()]
    assert any(f"{FAR}/v1: through the proxy http://127.0.0.1:" in m for m in said), said
    assert not any("secret" in r.getMessage() for r in caplog.records)
