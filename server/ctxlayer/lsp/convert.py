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

T = TypeVar("T")

_AT = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]+)`$")


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
    if missing:
        name = missing.group("name")
        path = f"{path}.{name}" if path else name
        message = "required field is missing"
    return (path or None), message


def parse(params: Any, struct: Any, at: str = "") -> Any:
    """Validate a request's params (or the part of them at `at`, e.g. "messages"); absent
    params mean {}. Raises -32602 naming the field."""
    if params is None:
        params = {}
    try:
        return msgspec.convert(params, struct)
    except msgspec.ValidationError as exc:
        field, message = field_error(exc)
        if at:
            field = at if not field else at + (field if field.startswith("[") else "." + field)
        raise invalid_params(field, message) from None


def to_wire(result: Any) -> Any:
    """Structs (and lists of them) to JSON-ready builtins: what a pygls handler must return."""
    return msgspec.to_builtins(result)
