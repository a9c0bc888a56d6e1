"""Crossing the wire: plain-dict params in, validated protocol structs, plain builtins out.

Owns: the cattrs converter pygls uses (custom methods' params stay plain dicts instead of
pygls' namedtuple `Object`s), `parse` (msgspec validation with the failing field named as
`messages[3].role`) and `to_wire` (a Struct returned to pygls would send NO response, so every
handler returns builtins).
"""

from __future__ import annotations

import functools
import re
from typing import Any, TypeVar

import cattrs
import msgspec
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)

from ctxlayer.lsp.errors import invalid_params
from ctxlayer.protocol import LSP_REQUEST_FIELDS

T = TypeVar("T")

_AT = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]+)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<name>[^`]+)`$")


@functools.cache
def converter_factory() -> cattrs.Converter:
    """pygls' converter, but generic JSON-RPC messages keep their params/result as dicts. One
    per process, shared by its connections (pygls asks for one per connection): cattrs writes
    and compiles a function per type the first time a converter meets it (about 35 for a
    connection's first requests, 15 ms), and the converter is only read once made."""
    converter = default_converter()

    def request(obj: dict, cls: type) -> Any:
        return cls(id=obj["id"], method=obj["method"], jsonrpc=obj["jsonrpc"],
                   params=obj.get("params"))

    def notification(obj: dict, cls: type) -> Any:
        return cls(method=obj["method"], jsonrpc=obj["jsonrpc"], params=obj.get("params"))

    def response(obj: dict, cls: type) -> Any:
        return cls(id=obj["id"], jsonrpc=obj["jsonrpc"], result=obj.get("result"))

    converter.register_structure_hook(JsonRPCRequestMessage, request)
    converter.register_structure_hook(JsonRPCNotification, notification)
    converter.register_structure_hook(JsonRPCResponseMessage, response)
    return converter


def field_error(error: msgspec.ValidationError) -> tuple[str | None, str]:
    """Split msgspec's "... - at `$.messages[3].role`" into ("messages[3].role", "...")."""
    m = _AT.match(str(error))
    assert m is not None  # the pattern matches any string
    message, path = m.group("msg"), (m.group("path") or "").lstrip(".")
    missing = _MISSING.match(message)
    unknown = _UNKNOWN.match(message)
    if missing or unknown:  # the field itself is named, not the object that lacks or has it
        name = (missing or unknown).group("name")  # type: ignore[union-attr]
        path = f"{path}.{name}" if path else name
        message = "required field is missing" if missing else "unknown field"
    return (path or None), message


def parse(params: Any, struct: Any, at: str = "") -> Any:
    """Validate a request's params (or the part of them at `at`, e.g. "messages"); absent
    params mean {}. Raises -32602 naming the field: a field the struct does not declare too
    (protocol.Params), but for those any LSP client may add to a request, which are ignored."""
    if params is None:
        params = {}
    if not at and isinstance(params, dict) and any(k in params for k in LSP_REQUEST_FIELDS):
        params = {k: v for k, v in params.items() if k not in LSP_REQUEST_FIELDS}
    try:
        return msgspec.convert(params, struct)
    except msgspec.ValidationError as exc:
        field, message = field_error(exc)
        if message == "unknown field" and field is not None and field.isidentifier():
            # one of the request's own: say what it takes (a field of ctx/prepare sent to
            # ctx/count, `request`, is told apart from a misspelling)
            message += f" (it takes {', '.join(_declared(struct)) or 'none'})"
        if at:
            field = at if not field else at + (field if field.startswith("[") else "." + field)
        raise invalid_params(field, message) from None


def _declared(struct: Any) -> list[str]:
    """The names a params struct takes on the wire."""
    fields = msgspec.structs.fields(struct) if isinstance(struct, type) else ()
    return [f.encode_name for f in fields]


def to_wire(result: Any) -> Any:
    """Structs (and lists of them) to JSON-ready builtins: what a pygls handler must return."""
    return msgspec.to_builtins(result)
