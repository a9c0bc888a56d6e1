"""`ctxlayer chats` asks the gateway with the state folder's token (which also opens
`serve --tcp`), over loopback only: never to wherever a redirect points."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from ctxlayer.cli import UsageError
from ctxlayer.commands.chats import fetch


@contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[int]:
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()


def test_a_redirect_is_not_followed_with_the_token():
    """A gateway killed with -9 leaves gateway.json naming its port; another local app now
    serves it and answers 302 to a login page elsewhere. urllib's redirect handler sent the
    Authorization header on to that host (the probe: a non-loopback address got the token),
    and the command printed that host's answer as the chats. Now the redirect is an error."""
    received: list[str | None] = []

    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            received.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"conversations": []}')

        def log_message(self, *args: object) -> None:
            pass

    with serving(Elsewhere) as far:
        class Redirecting(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{far}/login")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        with serving(Redirecting) as near, pytest.raises(UsageError) as refused:
            fetch(f"http://127.0.0.1:{near}/ctxlayer/conversations", "the-state-token")
    assert received == []
    assert "302" in str(refused.value)
