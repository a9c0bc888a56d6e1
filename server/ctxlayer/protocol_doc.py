"""docs/protocol.md, generated from protocol.py so the document cannot drift from the structs.

`ctxlayer schema --markdown` prints it; tests/test_protocol_doc.py fails when the committed file
differs (regenerate with `ctxlayer schema --markdown > docs/protocol.md`).
"""

from __future__ import annotations

import msgspec.inspect as mi

from ctxlayer import protocol as p


def _type(t: mi.Type) -> str:
    if isinstance(t, mi.StructType):
        return t.cls.__name__
    if isinstance(t, mi.ListType):
        return f"[{_type(t.item_type)}]"
    if isinstance(t, mi.DictType):
        return "object"
    if isinstance(t, mi.UnionType):
        parts = [_type(x) for x in t.types if not isinstance(x, mi.NoneType)]
        return " | ".join(parts) + (" | null" if t.includes_none else "")
    if isinstance(t, mi.LiteralType):
        return " / ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in t.values)
    return {mi.StrType: "string", mi.IntType: "int", mi.FloatType: "number",
            mi.BoolType: "bool", mi.NoneType: "null"}.get(type(t), type(t).__name__)


def _fields(cls: type) -> list[str]:
    info = mi.type_info(cls)
    rows = []
    for f in info.fields:
        opt = "" if f.required else "?"
        default = "" if f.required or f.default in (None, mi.NODEFAULT) else f" (default {f.default!r})"
        rows.append(f"`{f.encode_name}{opt}`: {_type(f.type)}{default}")
    return rows or ["(no fields)"]


def _section(title: str, cls: type) -> list[str]:
    doc = (cls.__doc__ or "").strip().splitlines()
    head = f"**{title}** `{cls.__name__}`" + (f": {doc[0]}" if doc and "Wire" not in doc[0] else "")
    return [head, "", *[f"- {row}" for row in _fields(cls)], ""]


def render() -> str:
    out = ["# ctxlayer protocol (generated)", "",
           f"Protocol version {p.PROTOCOL_VERSION}. Generated from `server/ctxlayer/protocol.py` "
           "by `ctxlayer schema --markdown`; do not edit by hand. PROTOCOL.md in the design notes "
           "is the contract; this is its exact shape.", "", "## Shared types", ""]
    for cls in (p.Message, p.ToolCall, p.AuditEntry, p.Budget, p.ByLayer, p.InitializationOptions):
        out += _section("type", cls)
    out += ["## Requests (client to server)", ""]
    for method, (params, result) in p.REQUESTS.items():
        out += [f"### `{method}`", ""] + _section("params", params) + _section("result", result)
    out += ["## Notifications (server to client)", ""]
    for method, cls in p.NOTIFICATIONS.items():
        out += [f"### `{method}`", ""] + _section("params", cls)
    out += ["## Requests (server to client)", ""]
    for method, (params, result) in p.SERVER_REQUESTS.items():
        out += [f"### `{method}`", ""] + _section("params", params) + _section("result", result)
    out += ["## Errors", "",
            "- -32700 parse error, -32600 invalid request, -32601 unknown method, -32602 invalid "
            "params (the message names the field)",
            f"- {p.ERROR_PINNED_OVER_BUDGET} the pinned system content alone exceeds the budget",
            f"- {p.ERROR_UNKNOWN_SESSION} unknown session",
            f"- {p.ERROR_OUTSIDE_WORKSPACE} a path outside the workspace",
            f"- {p.ERROR_UNAUTHORIZED} unauthorized (TCP: the first message must be `initialize` "
            "with `initializationOptions.token`)", ""]
    return "\n".join(out)
