"""The language server of one connection: pygls 2 wired to ctxlayer.

Owns: `CtxServer` (one per connection; per-connection state and the hooks handler modules
plug into) and `CtxProtocol` (pygls' protocol with our `initialize` capabilities, an `exit`
that ends the connection rather than the process in TCP mode, and quiet error reporting).

Where things live (read this before adding a handler module):
- `server.daemon`: per-process services shared by all connections (lsp/daemon.py): tokenizers,
  live workspaces, `daemon.service(name, factory)` singletons such as a session store.
- `server.options`: the client's `initializationOptions` (protocol.InitializationOptions).
- `server.root`, `server.config`, `server.live`: this connection's workspace (after
  `initialized`); `await server.segment()` gives the current WorkspaceSegment.
- `server.segment_listeners`: callables `(server, segment, changed_parts)` run on the event loop
  after each segment change, after `ctx/segmentChanged` was sent (a coroutine is scheduled).
- `server.ready_listeners`: callables `(server)` run once the first workspace scan finished.
- `server.close_listeners`: callables `(server)` run when the connection ends.

Must not: do CPU work on the event loop (use `daemon.tokenizers.run` or `asyncio.to_thread`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

import ctxlayer
from ctxlayer import protocol
from ctxlayer.core.text import content_hash
from ctxlayer.lsp import errors
from ctxlayer.lsp.convert import converter_factory, to_wire
from ctxlayer.lsp.daemon import Daemon
from ctxlayer.lsp.live import LiveWorkspace

log = logging.getLogger(__name__)
_encoder = msgspec.json.Encoder()

SegmentListener = Callable[["CtxServer", protocol.WorkspaceSegment, list[str]], Any]
ServerListener = Callable[["CtxServer"], Any]


class CtxProtocol(LanguageServerProtocol):
    """pygls' LSP protocol with ctxlayer's capabilities and a connection-scoped `exit`."""

    _server: CtxServer

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):  # type: ignore[override]
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {
            "ctxlayer": {
                "protocolVersion": protocol.PROTOCOL_VERSION,
                "methods": sorted(m for m in self.fm.features if m.startswith("ctx/")),
                "notifications": sorted(protocol.NOTIFICATIONS),
            }
        }
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

    def __init__(self, daemon: Daemon, on_end: Callable[[int], None] | None = None) -> None:
        super().__init__(
            "ctxlayer",
            ctxlayer.__version__,
            text_document_sync_kind=types.TextDocumentSyncKind.None_,
            protocol_cls=CtxProtocol,
            converter_factory=converter_factory,
        )
        self.daemon = daemon
        self.options = protocol.InitializationOptions()
        self.option_problems: list[str] = []
        self.root: Path | None = None
        self.config: Any = None
        self.config_problems: list[str] = []
        self.live: LiveWorkspace | None = None
        #: set once `initialized` decided on `live` (so early requests wait for it)
        self.live_decided = asyncio.Event()
        self.segment_listeners: list[SegmentListener] = []
        self.ready_listeners: list[ServerListener] = []
        self.close_listeners: list[ServerListener] = []
        self._on_end = on_end
        self._ended = False
        self._tasks: set[asyncio.Future] = set()

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

    # -- model and budget ----------------------------------------------------------------------

    def model(self, requested: str | None = None) -> str | None:
        """The model a request is about: its own, else the one given at initialize."""
        return requested or self.options.model

    def default_budget(self, model: str | None, reserve_output: int | None = None) -> int:
        """Context window minus the output reserve (request, then initialize, then model)."""
        from ctxlayer.tokenizers import model_info

        info = model_info(model)
        window = self.options.context_window or info.context_window
        reserve = reserve_output if reserve_output is not None else self.options.reserve_output
        if reserve is None:
            reserve = info.output_allowance
        return max(1, window - reserve)

    # -- the workspace -------------------------------------------------------------------------

    async def segment(self) -> protocol.WorkspaceSegment:
        """The current workspace segment; an empty one when the client named no workspace."""
        if self.root is not None and not self.live_decided.is_set():
            await self.live_decided.wait()
        if self.live is None:
            return empty_segment()
        return await self.live.current()

    def segment_changed(self, segment: protocol.WorkspaceSegment, changed: list[str]) -> None:
        """Subscriber of the live workspace: notify the client, then run the listeners."""
        self.notify("ctx/segmentChanged", protocol.SegmentChanged(
            hash=segment.hash, version=segment.version, tokens=segment.tokens,
            changed=changed,  # type: ignore[arg-type]
        ))
        for listener in list(self.segment_listeners):
            try:
                self.spawn(listener(self, segment, changed))
            except Exception:
                log.exception("a segment listener failed")

    # -- the end -------------------------------------------------------------------------------

    def end(self, code: int) -> None:
        """The client said `exit` or went away: release what this connection holds."""
        if self._ended:
            return
        self._ended = True
        for listener in list(self.close_listeners):
            try:
                self.spawn(listener(self))
            except Exception:
                log.exception("a close listener failed")
        if self.live is not None:
            try:
                self.live.subscribers.remove(self.segment_changed)
            except ValueError:
                pass
            self.daemon.workspaces.release(self.live)
            self.live = None
        if self._on_end is not None:
            self._on_end(code)


def empty_segment() -> protocol.WorkspaceSegment:
    return protocol.WorkspaceSegment(text="", tokens=0, hash=content_hash(""), version=0,
                                     updated_at="", parts=[])
