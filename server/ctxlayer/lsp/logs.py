"""Where the daemon's logs go: stderr or a file, and WARNING+ to the clients' log windows.

Owns: logging setup for `ctxlayer serve`. Never stdout: in stdio mode it is the JSON-RPC
channel. pygls' own loggers stay quiet unless -vv (at INFO they log every message body, the
TCP token included, and they log each rejected request with a traceback).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from ctxlayer import loglines

#: set on a log record of a message already told to the client it concerns (CtxServer.tell):
#: forwarded, it reached that client twice and every other client once, in their log windows
TOLD = "ctxlayer_told"


class ClientLogHandler(logging.Handler):
    """Forwards records to every connected client as `window/logMessage` (on the loop), but
    those the daemon logs of what it told one client (`TOLD`)."""

    def __init__(self, level: int = logging.WARNING) -> None:
        super().__init__(level)
        self.servers: set[Any] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._local = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._local, "busy", False) or not self.servers or self.loop is None \
                or getattr(record, TOLD, False):
            return
        message = self.format(record)
        level = "error" if record.levelno >= logging.ERROR else "warning"
        try:
            self.loop.call_soon_threadsafe(self._send, message, level)
        except RuntimeError:  # the loop is closed
            pass

    def _send(self, message: str, level: str) -> None:
        self._local.busy = True
        try:
            for server in list(self.servers):
                server.tell(message, level)
        finally:
            self._local.busy = False


client_logs = ClientLogHandler()


def setup(verbosity: int = 0, log_file: str | None = None) -> None:
    """-v: INFO, -vv: DEBUG, -vvv: pygls too. Replaces any handler on the root logger."""
    root = logging.getLogger()
    out = loglines.handler(log_file)  # first: a file that cannot be opened changes nothing
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(out)
    client_logs.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logging.getLogger("ctxlayer").addHandler(client_logs)
    root.setLevel(logging.WARNING)
    level = {0: logging.WARNING, 1: logging.INFO}.get(verbosity, logging.DEBUG)
    logging.getLogger("ctxlayer").setLevel(level)
    # pygls logs every rejected request with a traceback at ERROR: our own report_server_error
    # logs what matters (lsp/server.py), so pygls speaks only from -vv.
    pygls_level = {0: logging.CRITICAL, 1: logging.CRITICAL, 2: logging.WARNING}.get(
        verbosity, logging.DEBUG)
    for name in ("pygls", "lsprotocol"):
        logging.getLogger(name).setLevel(pygls_level)
