"""The language server of one connection: pygls 2 wired to the state.

Owns: `CtxServer` (one per connection: its `Caller`, the state's events forwarded to this
client, the end of the connection) and `CtxProtocol` (pygls' protocol with our `initialize`
announcement, an `exit` that ends the connection rather than the process in TCP mode, plain
results written without pygls' converter, and quiet error reporting).

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

import msgspec
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

import ctxlayer
from ctxlayer import protocol
from ctxlayer.lsp import errors
from ctxlayer.lsp.convert import converter_factory, to_wire
from ctxlayer.state import Caller, State

log = logging.getLogger(__name__)
_encoder = msgspec.json.Encoder()



class CtxProtocol(LanguageServerProtocol):
    """pygls' LSP protocol with ctxlayer's capabilities and a connection-scoped `exit`."""

    _server: CtxServer

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):  # type: ignore[override]
        result = yield from super().lsp_initialize(params)
        methods = sorted(m for m in self.fm.features if m.startswith("ctx/"))
        announcement = self._server.caller.announcement(methods)
        result.capabilities.experimental = {"ctxlayer": to_wire(announcement)}
        return result

    def _send_response(self, msg_id, result=None, error=None):  # type: ignore[override]
        """Plain results (what our handlers return) skip pygls' cattrs path: less CPU per
        request. LSP types (initialize's result) and errors go through pygls."""
        if error is None and (result is None or isinstance(result, dict | list)):
            self.send_plain({"jsonrpc": "2.0", "id": msg_id, "result": result})
        else:
            super()._send_response(msg_id, result, error)

    def send_plain(self, message: dict) -> None:
        """Frame and write a JSON-ready message (builtins only)."""
        if self.writer is None:
            log.error("no transport to send on")
            return
        body = _encoder.encode(message)
        try:
            self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        except BrokenPipeError:
            raise
        except Exception:
            log.exception("sending a message failed")

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args):  # type: ignore[override]
        if (user_handler := self.fm.features.get(types.EXIT)) is not None:
            yield user_handler, args, None
        self._server.end(0 if self._shutdown else 1)


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
        self._tasks: set[asyncio.Future] = set()
        state.events.budget_listeners.append(self._budget_changed)
        state.events.message_listeners.append(self._message)

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
        """`window/logMessage` (and `window/showMessage` when `show`) to this client."""
        kind = {"error": types.MessageType.Error, "warning": types.MessageType.Warning}.get(
            level, types.MessageType.Info
        )
        try:
            self.window_log_message(types.LogMessageParams(type=kind, message=message))
            if show:
                self.window_show_message(types.ShowMessageParams(type=kind, message=message))
        except Exception:
            log.exception("could not send a message to the client")

    def notify(self, method: str, params: Any) -> None:
        """Send a ctxlayer notification (a protocol struct or builtins)."""
        self.protocol.send_plain({"jsonrpc": "2.0", "method": method, "params": to_wire(params)})

    def spawn(self, result: Any) -> None:
        """Keep a listener's coroutine alive and log its failure."""
        if not asyncio.iscoroutine(result) and not isinstance(result, asyncio.Future):
            return
        task = asyncio.ensure_future(result)
        self._tasks.add(task)

        def done(t: asyncio.Future) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("listener failed", exc_info=t.exception())

        task.add_done_callback(done)

    # -- the state's events, for this client ----------------------------------------------

    def _budget_changed(self, workspace: str, budget: protocol.Budget, caller: object) -> None:
        if (workspace == self.caller.workspace and caller in (None, self.caller)
                and not self._ended):
            self.notify("ctx/budgetChanged", budget)

    def _message(self, workspace: str, level: str, text: str) -> None:
        if workspace in ("", self.caller.workspace) and not self._ended:
            self.tell(text, level, show=True)  # the state's messages are the user's to read

    def segment_changed(self, segment: protocol.WorkspaceSegment, changed: list[str]) -> None:
        """Subscriber of the live workspace: notify the client, then re-measure the sessions."""
        from ctxlayer.state.requests.sessions import on_segment_changed

        self.notify("ctx/segmentChanged", protocol.SegmentChanged(
            hash=segment.hash, version=segment.version, tokens=segment.tokens,
            changed=changed,  # type: ignore[arg-type]
        ))
        self.spawn(on_segment_changed(self.caller, segment))

    # -- the end -------------------------------------------------------------------------------

    def end(self, code: int) -> None:
        """The client said `exit` or went away: release what this connection holds."""
        if self._ended:
            return
        self._ended = True
        events = self.state.events
        for listeners, mine in ((events.budget_listeners, self._budget_changed),
                                (events.message_listeners, self._message)):
            if mine in listeners:
                listeners.remove(mine)
        live = self.caller.live
        if live is not None:
            if self.segment_changed in live.subscribers:
                live.subscribers.remove(self.segment_changed)
            self.state.workspaces.release(live)
            self.caller.live = None
        if self._on_end is not None:
            self._on_end(code)
