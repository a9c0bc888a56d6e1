"""The JSON-RPC face of the requests table: one pygls feature per method of
`state.requests.REQUESTS`, each doing the same four steps: take its place in its lane (before
any await, so a session's requests apply in arrival order), parse the params with the
method's struct (-32602 names the bad field), run the state function where the table says
(`state.requests.call`), and convert the result to builtins.

Must not: hold request logic (that is the state function's) or call another method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctxlayer import protocol
from ctxlayer.lsp.convert import parse, to_wire
from ctxlayer.lsp.errors import mapped
from ctxlayer.state.requests import REQUESTS, call

if TYPE_CHECKING:
    from ctxlayer.lsp.server import CtxServer


def handler(method: str, params_type: type) -> Any:
    async def handle(ls: CtxServer, params: dict | None) -> Any:
        with mapped():
            p = parse(params, params_type)
            return to_wire(await call(ls.caller, method, p))

    handle.__name__ = handle.__qualname__ = method.replace("/", "_")
    return handle


def register(server: CtxServer) -> None:
    for method in REQUESTS:
        params_type, _ = protocol.REQUESTS[method]
        server.feature(method)(handler(method, params_type))


def register_all(server: CtxServer) -> None:
    """The LSP lifecycle first (it fills the caller the requests read), then every request."""
    from ctxlayer.lsp import lifecycle

    lifecycle.register(server)
    register(server)
