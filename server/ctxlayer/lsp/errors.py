"""JSON-RPC errors of the daemon, mapped in one place.

Owns: the mapping from the domain's `ContextError.kind` to a JSON-RPC code, the -32602
"invalid params" error naming the offending field, and the codes the transport answers with
(parse error, invalid request, message too large, unauthorized). Handlers raise `ContextError`
or call `invalid_params`; nothing else in the daemon builds error codes.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Iterator

from pygls.exceptions import JsonRpcException

from ctxlayer import protocol
from ctxlayer.core.errors import TOO_DEEP, ContextError
from ctxlayer.store.errors import StoreError, describe_store_error

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: TCP mode: the first message was not an `initialize` carrying the right token.
UNAUTHORIZED = protocol.ERROR_UNAUTHORIZED

CODES: dict[str, int] = {
    "pinned_over_budget": protocol.ERROR_PINNED_OVER_BUDGET,
    "unknown_session": protocol.ERROR_UNKNOWN_SESSION,
    "outside_workspace": protocol.ERROR_OUTSIDE_WORKSPACE,
    "invalid": INVALID_PARAMS,
}


class RpcError(JsonRpcException):
    """An error answered to one request; pygls turns it into the response's `error`."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(code=code, message=message, data=data)


def invalid_params(field: str | None, message: str) -> RpcError:
    """-32602 naming the field (`messages[3].role`), or the params as a whole when None."""
    where = field or "params"
    return RpcError(INVALID_PARAMS, f"invalid params: {where}: {message}", {"field": where})


def from_context_error(exc: ContextError) -> RpcError:
    """The one mapping from a domain error to the wire. A kind without a code is a bug of
    ours, not the client's: an internal error, logged."""
    code = CODES.get(exc.kind)
    if code is None:
        log.error("a domain error of unknown kind %r: %s", exc.kind, exc)
        return RpcError(INTERNAL_ERROR, f"internal error: {exc}", {"kind": exc.kind})
    data: dict[str, str] = {"kind": exc.kind}
    message = str(exc)
    if exc.field:
        data["field"] = exc.field
        if exc.field not in message:
            message = f"{exc.field}: {message}"
    return RpcError(code, message, data)


def from_store_error(exc: Exception) -> RpcError:
    """The sessions database failed: say what failed, so the user can act on it."""
    return RpcError(protocol.ERROR_STORE, f"sessions database: {describe_store_error(exc)}",
                    {"kind": "store"})


@contextlib.contextmanager
def mapped() -> Iterator[None]:
    """Domain and storage errors raised inside reach the client as their JSON-RPC code."""
    try:
        yield
    except ContextError as exc:
        raise from_context_error(exc) from None
    except (StoreError, sqlite3.Error) as exc:
        log.error("sessions database: %s", exc)
        raise from_store_error(exc) from None
    except RecursionError:  # a value read whole, then walked deeper in the stack
        log.warning("a request %s", TOO_DEEP)
        raise invalid_params(None, TOO_DEEP) from None
