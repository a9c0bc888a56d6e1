"""An upstream that answers with a redirect gets it back to the client as sent, never followed:
aiohttp followed it to another origin with the client's `x-api-key` / `api-key` and, on a 307,
the whole conversation (only `Authorization` is dropped on such a hop). The SDKs follow none."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2 as httpx
import pytest
from gateway_stack import start_stack, stop_stack
from providers.standin import StandinThread

SEEN: list[tuple[str, dict]] = []  # what the other origin received


class Elsewhere(BaseHTTPRequestHandler):
    """Another origin: records what reaches it."""

    def _record(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        SEEN.append((self.path, dict(self.headers)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = _record

    def log_message(self, *args: object) -> None:
        pass


def redirecting_to(port: int) -> type[BaseHTTPRequestHandler]:
    class Redirecting(BaseHTTPRequestHandler):
        """The configured upstream: a 307 to the other origin for everything."""

        def _redirect(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(307)
            self.send_header("Location", f"http://127.0.0.1:{port}{self.path}")
            self.send_header("content-length", "0")
            self.end_headers()

        do_GET = do_POST = _redirect

        def log_message(self, *args: object) -> None:
            pass

    return Redirecting


@pytest.fixture
def servers() -> Iterator[tuple[int, int]]:
    other = ThreadingHTTPServer(("127.0.0.1", 0), Elsewhere)
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), redirecting_to(other.server_port))
    for server in (other, upstream):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield upstream.server_port, other.server_port
    for server in (other, upstream):
        server.shutdown()
        server.server_close()


def test_a_redirect_goes_back_to_the_client_with_nothing_sent_elsewhere(world, servers):
    up, _ = servers
    SEEN.clear()
    with StandinThread() as thread:
        gateway, state = start_stack(thread, world / "workspace", world / "state-redirect")
        try:
            gateway.config = gateway.config.__class__(
                openai_base_url=f"http://127.0.0.1:{up}/v1",
                anthropic_base_url=f"http://127.0.0.1:{up}")
            messages = httpx.post(f"{gateway.urls.anthropic}/v1/messages", json={
                "model": "claude-sonnet-4", "max_tokens": 5,
                "messages": [{"role": "user", "content": "a private conversation"}]},
                headers={"x-api-key": "sk-ant-SECRET", "anthropic-version": "2023-06-01"})
            models = httpx.get(f"{gateway.urls.openai}/models",
                               headers={"api-key": "AZURE-SECRET"})
        finally:
            stop_stack(thread, gateway, state)
    assert messages.status_code == models.status_code == 307
    assert messages.headers["location"].startswith("http://127.0.0.1:")
    assert SEEN == []  # neither the keys nor the conversation went to the other origin
