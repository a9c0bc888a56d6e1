"""The gateway's aiohttp runner: the answers aiohttp makes by itself come out as the gateway's
own errors do, in the provider's JSON shape, so that an SDK raises its typed error with the
message in it and a CLI shows the message.

aiohttp answers some requests with no route or middleware of the gateway's having a say, in
text/plain (text/html for a browser), which the SDKs show as a bare status ("Error code: 500
- '500 Internal Server Error\\n\\nServer got itself in trouble'") and a 504 as nothing at all:
- a request its parser refused (400, 413, 431): `RequestHandler.handle_error`, before any
  route (its text quoted the refused line, an API key with it: unreadable.py);
- a handler's exception (500, a bug of ours) or its `asyncio.TimeoutError` (504):
  `handle_error` too;
- an `HTTPException` raised around the routes: the router's 404 for a target that is no
  path (`OPTIONS *`), a 405, and the 417 of an `Expect` it does not know, raised before any
  middleware runs.
So each connection's `handle_error` answers in JSON, and the application's request handler is
wrapped so that an HTTPException it raises is answered in JSON too. Which shape: the one of
the provider whose path the client called (`guard.format_of`); for a request whose head could
not be read, one both families' SDKs read (`errors.either_body`).

A request the parser refused is answered in HTTP/1.1: aiohttp makes its request from a
placeholder message (`web_protocol.ERROR`) that says HTTP/1.0, whatever the client spoke (the
version it spoke is in the head that could not be read; HTTP/1.1 is what the gateway speaks,
and what an HTTP/1.0 client reads too).

Owns: `Runner`. The aiohttp parts it relies on that are not aiohttp's documented API are in
`PRIVATE`, checked against the installed aiohttp by tests/gateway/test_aiohttp_parts.py, and
`Runner.setup` refuses to start without them rather than answer in text again.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

from aiohttp import web, web_protocol
from aiohttp.http import HttpVersion11
from aiohttp.web_protocol import RequestHandler

from ctxlayer.gateway.errors import GatewayError, either_body, error_body
from ctxlayer.gateway.guard import format_of
from ctxlayer.gateway.unreadable import parser_error, what_was_wrong

#: (owner, name, the parameters we pass, or None for an attribute) of what the runner relies
#: on beyond aiohttp's documented API
PRIVATE: tuple[tuple[Any, str, tuple[str, ...] | None], ...] = (
    (RequestHandler, "handle_error", ("self", "request", "status", "exc", "message")),
    (web.Server, "__call__", ("self",)),
    (web.Server, "request_handler", None),  # set on the instance: the application's handler
    (web.Server, "request_factory", None),  # the same: makes a connection's requests
    (web_protocol, "ERROR", None),  # the placeholder message of a refused request
)

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]

#: what the gateway says when it failed itself
_FAILED = {500: "the gateway failed answering the request (a bug; the gateway's log has the "
                "details)",
           504: "the gateway timed out answering the request"}
_CODES = {500: "gateway_error", 504: "gateway_timeout"}


class _Answering(RequestHandler):
    """aiohttp's connection handler, whose own error answers are in JSON."""

    __slots__ = ()

    def handle_error(self, request: Any, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        # aiohttp's own logs it (through unreadable.server_log) and refuses when an answer
        # was begun; its text answer is not sent
        super().handle_error(request, status, exc, message)
        refused = parser_error(exc)
        if refused is not None:
            body = either_body(GatewayError(
                status, f"the request was not read: {what_was_wrong(refused)}; the line is "
                "not repeated here, since it may hold an API key", code="unreadable_request"))
        else:
            err = GatewayError(status, _FAILED.get(status) or HTTPStatus(status).phrase,
                               code=_CODES.get(status, _code(HTTPStatus(status).phrase)))
            # a request the parser gave up on otherwise (its placeholder): no path to go by
            unread = request.method == web_protocol.ERROR.method
            body = either_body(err) if unread else error_body(format_of(request), err)
        said = web.json_response(body, status=status)
        said.force_close()  # as aiohttp's: what follows on the connection cannot be trusted
        return said


def _code(reason: str) -> str:
    """An error code from a status's reason phrase: `Expectation Failed` expectation_failed."""
    return re.sub(r"[^a-z0-9]+", "_", reason.lower()).strip("_")


def answered_in_json(request: web.BaseRequest, exc: web.HTTPException) -> web.Response:
    """An HTTPException raised around the routes, in the shape of the provider the client
    called, with aiohttp's own words where it had any beyond the status (`Unknown Expect:
    ...`) and its headers (a 405's `Allow`)."""
    said = exc.text if exc.text and exc.text != f"{exc.status}: {exc.reason}" else exc.reason
    err = GatewayError(exc.status, f"{said} ({request.method} {request.path})",
                       code=_code(exc.reason))
    headers = {k: v for k, v in exc.headers.items()
               if k.lower() not in ("content-type", "content-length")}
    return web.json_response(error_body(format_of(request), err), status=exc.status,
                             headers=headers)


def _in_json(handler: Handler) -> Handler:
    """The application's request handler, an HTTPException it raises answered in JSON."""

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400:  # a redirect or the like is no error
                raise
            return answered_in_json(request, exc)

    return handle


#: the placeholder message of a request the parser refused, as HTTP/1.1
_REFUSED = web_protocol.ERROR._replace(version=HttpVersion11)


def _in_http11(factory: Callable[..., web.BaseRequest]) -> Callable[..., web.BaseRequest]:
    """The server's request factory, a refused request's made HTTP/1.1 (the status line of
    its answer says the request's version)."""

    def make(message: Any, *rest: Any) -> web.BaseRequest:
        return factory(_REFUSED if message is web_protocol.ERROR else message, *rest)

    return make


class _Server(web.Server):
    """aiohttp's low-level server, whose connections are `_Answering`."""

    def __call__(self) -> RequestHandler:
        handler = super().__call__()
        handler.__class__ = _Answering  # no state of its own: only its handle_error differs
        return handler


class Runner(web.AppRunner):
    """aiohttp's AppRunner whose server answers its own errors in JSON.

    aiohttp has no hook for those answers: they are made by the connection's RequestHandler,
    which the runner's Server makes. The server the AppRunner made (its application's
    handler, middlewares and options) is kept, its class changed to `_Server` (which adds no
    state), its request handler and factory wrapped."""

    __slots__ = ()

    async def setup(self) -> None:
        await super().setup()
        server = self.server
        handler = getattr(server, "request_handler", None)
        factory = getattr(server, "request_factory", None)
        if type(server) is not web.Server or not callable(handler) or not callable(factory):
            raise RuntimeError(f"this aiohttp's server ({type(server).__name__}) is not the one "
                               "the gateway's runner knows (gateway/runner.py PRIVATE): its "
                               "errors would be answered in text")
        server.__class__ = _Server
        server.request_handler = _in_json(handler)
        server.request_factory = _in_http11(factory)
