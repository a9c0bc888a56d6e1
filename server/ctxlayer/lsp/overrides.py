"""Every place ctxlayer reaches into pygls' private parts, gathered so that a pygls upgrade
breaks one module, and `tests/lsp/test_overrides.py` says which part moved.

Owns: `CtxProtocol` (pygls' LSP protocol with our `initialize` announcement, a `shutdown`
answered after the requests that arrived before it but counted as received at once (an `exit`
sent before its answer waits for it and exits 0), an `exit` that ends the connection rather
than the process in TCP mode, and plain results written without
pygls' cattrs converter: `_send_response`), `shut_down(protocol)` (pygls' private
`_shutdown` flag, read by the transport and the stdio loop), and `PRIVATE`: each private or
undocumented member we override or read, with the parameters we rely on (the test checks
them against the installed pygls).
Must not: hold request logic.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import msgspec
from lsprotocol import types
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from ctxlayer.lsp.convert import to_wire

log = logging.getLogger(__name__)
_encoder = msgspec.json.Encoder()

#: (pygls class, member, the parameters we call or override it with; None: an attribute set
#: in `__init__`, checked on an instance)
PRIVATE: tuple[tuple[type, str, tuple[str, ...] | None], ...] = (
    (JsonRPCProtocol, "_send_response", ("self", "msg_id", "result", "error")),
    (JsonRPCProtocol, "_shutdown", None),
    (JsonRPCProtocol, "_server", None),
    (JsonRPCProtocol, "structure_message", ("self", "data")),
    (JsonRPCProtocol, "handle_message", ("self", "message")),
    (JsonRPCProtocol, "set_writer", ("self", "writer")),
    (JsonRPCProtocol, "writer", None),
    (JsonRPCProtocol, "fm", None),
    (LanguageServerProtocol, "lsp_initialize", ("self", "params")),
    (LanguageServerProtocol, "lsp_exit", ("self", "args")),
    (LanguageServerProtocol, "lsp_shutdown", ("self", "args")),
    (JsonRPCProtocol, "_request_futures", None),
)

#: how long `shutdown` waits for the requests that arrived before it: bounded, for a request
#: may wait on the client (its ctx/summarize answer), which may be waiting for this answer
SHUTDOWN_WAIT_S = 30.0


def shut_down(protocol: Any) -> bool:
    """Whether the client sent `shutdown`: received, answered or not yet (pygls sets its
    private flag once it answers; LSP's exit code asks whether it was received)."""
    return bool(protocol._shutdown) or getattr(protocol, "shutdown_id", None) is not None


class CtxProtocol(LanguageServerProtocol):
    """pygls' LSP protocol with ctxlayer's capabilities and a connection-scoped `exit`."""

    _server: Any  # the CtxServer (lsp/server.py) that made this protocol
    #: the id of the client's `shutdown` once received (its answer may wait for earlier work)
    shutdown_id: Any = None
    #: whether `shutdown` was answered; `exit` came before it was: the connection ends then
    _shutdown_answered = False
    _exit_after_answer = False

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
        if msg_id == self.shutdown_id and self.shutdown_id is not None:
            self._shutdown_answered = True
            if self._exit_after_answer:
                self._server.end(0)

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

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args):  # type: ignore[override]
        """The requests that arrived before `shutdown` are answered first; pygls cancelled
        them, so the appends a client pipelined before its shutdown (as LSP lets it) were
        answered "canceled" and lost. Then pygls' own (a request still running after the
        wait is cancelled there). It counts as received at once: an `exit` sent right after
        it, without waiting for its answer, exited 1 while the earlier requests ran."""
        self.shutdown_id = self.msg_id
        yield self._earlier_answered, (), None
        return (yield from super().lsp_shutdown(*args))

    async def _earlier_answered(self) -> None:
        mine = asyncio.current_task()
        # our handlers are tasks; shutdown's own answer is a plain future (never waited on)
        earlier = [f for f in self._request_futures.values()
                   if isinstance(f, asyncio.Task) and f is not mine and not f.done()]
        if earlier:
            try:
                await asyncio.wait(earlier, timeout=SHUTDOWN_WAIT_S)
            except asyncio.CancelledError:
                # the connection ended while waiting (stdin closed, a signal): pygls' caller
                # of this wait is a plain callback, where a cancellation was a logged
                # traceback; nothing is left to wait for
                return

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args):  # type: ignore[override]
        if (user_handler := self.fm.features.get(types.EXIT)) is not None:
            yield user_handler, args, None
        if self.shutdown_id is not None and not self._shutdown_answered:
            # `shutdown` still waits for the requests before it: they are answered, then it
            # (`_send_response` ends the connection then), as a client sending both at once
            # expects; its wait is bounded (SHUTDOWN_WAIT_S), and what they wait for of the
            # client (its summary) is given up now: it answers nothing after `exit`
            self._exit_after_answer = True
            self._server.said_exit()
            return
        self._server.end(0 if shut_down(self) else 1)


