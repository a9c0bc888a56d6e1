"""The language server of one connection: pygls 2 wired to the state.

Owns: `CtxServer` (one per connection: its `Caller`, the state's events forwarded to this
client, the end of the connection, quiet error reporting). Its protocol, `CtxProtocol`, and
everything else that reaches into pygls' private parts, is in `lsp/overrides.py`.

Where things live: `server.state` is the process's State (state/), shared by every
connection and the gateway; `server.caller` is what the state knows of this connection
(options, workspace, summarizer). Requests are declared in `state/requests/` and registered by
`lsp/dispatch.py`; the LSP lifecycle is `lsp/lifecycle.py`.
Must not: do request logic (the state functions do) or CPU work on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

import ctxlayer
from ctxlayer import protocol
from ctxlayer.lsp import errors
from ctxlayer.lsp.convert import converter_factory, to_wire
from ctxlayer.lsp.logs import TOLD
from ctxlayer.lsp.overrides import CtxProtocol
from ctxlayer.state import Caller, State
from ctxlayer.state.live import LiveWorkspace
from ctxlayer.state.opening import leave_workspace

log = logging.getLogger(__name__)



class CtxServer(LanguageServer):
    """One connection's server. See the module docstring for the plug-in points."""

    protocol: CtxProtocol

    def __init__(self, state: State, on_end: Callable[[int], None] | None = None) -> None:
        super().__init__(
            "ctxlayer",
            ctxlayer.__version__,
            text_document_sync_kind=types.TextDocumentSyncKind.None_,
            protocol_cls=CtxProtocol,
            converter_factory=converter_factory,
        )
        self.state = state
        self.caller = Caller(state, source="session")
        self.option_problems: list[str] = []
        self._on_end = on_end
        self._ended = False
        self._left = False  # the client said `exit` or went away
        self._leaving: asyncio.Future[None] | None = None
        state.events.budget_listeners.append(self._budget_changed)
        state.events.message_listeners.append(self._message)
        state.events.segment_listeners.append(self._segment_changed)

    # -- errors and logs -----------------------------------------------------------------------

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log only: a bug must not pop up a message box in the editor on every request."""
        if isinstance(error, JsonRpcException) and error.code != errors.INTERNAL_ERROR:
            log.debug("request refused: %s", error)  # already answered to the client
            return
        data = getattr(error, "data", None)
        trace = "".join(data.get("traceback", [])) if isinstance(data, dict) else ""
        log.error("internal error (%s): %s\n%s", getattr(source, "__name__", source), error,
                  trace)

    def tell(self, message: str, level: str = "info", *, show: bool = False) -> None:
        """`window/logMessage` (and `window/showMessage` when `show`) to this client. A warning
        or an error goes to the daemon's own log too: a problem of ctxlayer.toml, a project's
        upstream refused, reached the editor only, never `--log-file`."""
        kind = {"error": types.MessageType.Error, "warning": types.MessageType.Warning}.get(
            level, types.MessageType.Info
        )
        if kind != types.MessageType.Info:
            # for the daemon's own log only: the client is told below, no other one
            log.log(logging.ERROR if level == "error" else logging.WARNING, "told the client: %s",
                    message, extra={TOLD: True})
        try:
            self.window_log_message(types.LogMessageParams(type=kind, message=message))
            if show:
                self.window_show_message(types.ShowMessageParams(type=kind, message=message))
        except Exception:
            log.exception("could not send a message to the client")

    def notify(self, method: str, params: Any) -> None:
        """Send a ctxlayer notification (a protocol struct or builtins)."""
        self.protocol.send_plain({"jsonrpc": "2.0", "method": method, "params": to_wire(params)})

    # -- the state's events, for this client ----------------------------------------------

    def _budget_changed(self, workspace: str, budget: protocol.Budget, caller: object) -> None:
        if (workspace == self.caller.workspace and caller in (None, self.caller)
                and not self._ended):
            self.notify("ctx/budgetChanged", budget)

    def _message(self, workspace: str, level: str, text: str) -> None:
        if workspace in ("", self.caller.workspace) and not self._ended:
            self.tell(text, level, show=True)  # the state's messages are the user's to read

    def _segment_changed(self, live: LiveWorkspace, change: protocol.SegmentChanged) -> None:
        # the state re-measures the sessions itself; the client is told of its workspace's
        if live is self.caller.live and not self._ended:
            self.notify("ctx/segmentChanged", change)

    # -- the end -------------------------------------------------------------------------------

    def leaving(self) -> asyncio.Future[None]:
        """Done once the client said `exit` (or went away): what waits on it gives up."""
        if self._leaving is None:
            self._leaving = asyncio.get_running_loop().create_future()
            if self._left:
                self._leaving.set_result(None)
        return self._leaving

    def said_exit(self) -> None:
        """The client said `exit`: it answers no request of ours from now on."""
        self._left = True
        if self._leaving is not None and not self._leaving.done():
            self._leaving.set_result(None)

    def end(self, code: int) -> None:
        """The client said `exit` or went away: release what this connection holds."""
        if self._ended:
            return
        self._ended = True
        self.said_exit()
        events = self.state.events
        for listeners, mine in ((events.budget_listeners, self._budget_changed),
                                (events.message_listeners, self._message),
                                (events.segment_listeners, self._segment_changed)):
            if mine in listeners:
                listeners.remove(mine)  # type: ignore[arg-type]
        leave_workspace(self.caller)
        if self._on_end is not None:
            self._on_end(code)
