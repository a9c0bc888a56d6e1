"""The gateway's own errors, in the shape of the provider the client speaks to, so an SDK
raises its usual exception with our message in it.

Owns: `GatewayError` (a status, a message, the field at fault) and its rendering as an
OpenAI or Anthropic error body (the Responses API's is OpenAI's; one both read, `either_body`,
for a request whose provider is not known), or as the error event that
ends a stream in each API's own shape (Chat Completions: a `data:` chunk with `error`; the
Responses API and Anthropic: an `event: error`, each its own JSON); the mapping of the state's
ContextError kinds to statuses.
Errors of the upstream are never rewritten here: they pass through untouched.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from ctxlayer.core.errors import ContextError

#: what each domain error kind is over HTTP: all are the client's request, hence 400s
_STATUS_OF_KIND = {"invalid": 400, "pinned_over_budget": 400, "unknown_session": 400,
                   "outside_workspace": 400}

#: the params' key ctx/prepare's request sits under
_REQUEST = "request."

_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                    403: "permission_error", 404: "not_found_error", 408: "timeout_error",
                    413: "request_too_large", 500: "api_error", 502: "api_error",
                    503: "api_error", 504: "timeout_error"}


class GatewayError(Exception):
    """A request the gateway answers itself (never forwarded)."""

    def __init__(self, status: int, message: str, *, field: str | None = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.field, self.code = status, field, code

    @classmethod
    def from_context(cls, exc: ContextError) -> GatewayError:
        # the state names a field from ctx/prepare's params (`request.messages[2]`); here the
        # body is the request, and the client looks for the field where it wrote it
        field = exc.field[len(_REQUEST):] if exc.field and exc.field.startswith(_REQUEST) \
            else exc.field
        return cls(_STATUS_OF_KIND.get(exc.kind, 400), str(exc).removeprefix(_REQUEST),
                   field=field, code=exc.kind)


def error_body(fmt: str, err: GatewayError) -> dict[str, Any]:
    """The error JSON of the provider `fmt` ("openai" | "anthropic"), naming the field."""
    message = f"ctxlayer gateway: {err}"
    if err.field and err.field not in message:
        message += f" (field `{err.field}`)"
    if fmt == "anthropic":
        return {"type": "error", "error": {
            "type": _ANTHROPIC_TYPES.get(err.status, "invalid_request_error"),
            "message": message}}
    kind = "invalid_request_error" if err.status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": err.field, "code": err.code}}


def either_body(err: GatewayError) -> dict[str, Any]:
    """The error JSON of a request whose provider is not known (its head could not be read):
    Anthropic's shape with OpenAI's `param` and `code` beside its `type` and `message`, which
    both families' SDKs read as their own."""
    body = error_body("anthropic", err)
    body["error"].update(param=err.field, code=err.code)
    return body


def error_response(fmt: str, err: GatewayError,
                   headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(error_body(fmt, err), status=err.status, headers=headers)


def sse_error(fmt: str, err: GatewayError, sequence_number: int = 0) -> bytes:
    """The last event of a stream the gateway cannot finish, as the provider sends one: an
    SDK raises it as an error instead of taking a cut answer for a whole one.
    ``sequence_number``: a Responses stream's next (its events are numbered)."""
    said = error_body(fmt, err)
    if fmt == "responses":
        said = responses_error_event(said["error"], sequence_number)
    data = json.dumps(said, ensure_ascii=False).encode()
    if fmt in ("anthropic", "responses"):
        return b"event: error\ndata: " + data + b"\n\n"
    return b"data: " + data + b"\n\n"


def responses_error_event(error: dict[str, Any], sequence_number: int) -> dict[str, Any]:
    """The Responses API's streaming `error` event: `type`, `code`, `message`, `param` and
    `sequence_number` at its top, as its reference documents it. The error object is kept
    beside them under `error`, as OpenAI's own streams nest it: clients read one or the
    other (the official Python and Node SDKs raise an APIError on a streamed event that
    carries `error`; a Chat Completions-shaped chunk, which the gateway sent before, is no
    Responses event at all and a client that reads the events by their `type` skips it)."""
    code = error.get("code") or error.get("type")  # a string, as the event's schema has it
    return {"type": "error", "code": code, "message": error["message"],
            "param": error.get("param"), "sequence_number": sequence_number,
            "error": {**error, "code": code}}
