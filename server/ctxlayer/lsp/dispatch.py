"""The JSON-RPC face of the requests table: one pygls feature per method of
`state.requests.REQUESTS`, each doing the same four steps: take its place in its lane (before
any await, so a session's requests apply in arrival order), parse the params with the
method's struct (-32602 names the bad field), call the state function (on the loop, or on a
worker thread for a plain function), and convert the result to builtins.

Must not: hold request logic (that is the state function's) or call another method.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from typing import TYPE_CHECKING, Any

from ctxlayer import protocol
from ctxlayer.lsp.convert import parse, to_wire
from ctxlayer.lsp.errors import mapped
from ctxlayer.state.requests import REQUESTS, Request

if TYPE_CHECKING:
    from ctxlayer.lsp.server import CtxServer


def handler(method: str, request: Request, params_type: type) -> Any:
    is_async = inspect.iscoroutinefunction(request.fn)

    async def handle(ls: CtxServer, params: dict | None) -> Any:
        caller = ls.caller
        with mapped():
            p = parse(params, params_type)
        lane = ls.state.lanes.turn(request.lane(caller, p)) if request.lane else None
        async with lane if lane is not None else contextlib.nullcontext():
            with mapped():
                if is_async:
                    result = await request.fn(caller, p)
                else:
                    result = await asyncio.to_thread(request.fn, caller, p)
        return to_wire(result)

    handle.__name__ = handle.__qualname__ = method.replace("/", "_")
    return handle


def register(server: CtxServer) -> None:
    for method, request in REQUESTS.items():
        params_type, _ = protocol.REQUESTS[method]
        server.feature(method)(handler(method, request, params_type))


def register_all(server: CtxServer) -> None:
    """The LSP lifecycle first (it fills the caller the requests read), then every request."""
    from ctxlayer.lsp import lifecycle

    lifecycle.register(server)
    register(server)
