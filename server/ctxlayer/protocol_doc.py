"""docs/protocol.md, generated from protocol.py so the document cannot drift from the structs.

`ctxlayer schema --markdown` prints it; tests/test_protocol_doc.py fails when the committed file
differs (regenerate with `ctxlayer schema --markdown > docs/protocol.md`).

It says the exact shape, so every type a field names is defined in it: the types the sections
name that no section defines (a session's listing, a rule, a tool...) follow them under "Other
types", found by walking the fields.
"""

from __future__ import annotations

import inspect
from typing import Any

import msgspec.inspect as mi

from ctxlayer import protocol as p

#: what each domain error code means, by its constant in protocol.py (a code without a line
#: here stops the rendering: the doc lists every code the daemon may send)
ERRORS = {
    "ERROR_PINNED_OVER_BUDGET": "the pinned system content alone exceeds the budget",
    "ERROR_UNKNOWN_SESSION": "unknown session",
    "ERROR_OUTSIDE_WORKSPACE": "a path outside the workspace",
    "ERROR_UNAUTHORIZED": "unauthorized (TCP: the first message must be `initialize` with "
                          "`initializationOptions.token`)",
    "ERROR_STORE": "the sessions database failed (locked, disk full, unreadable); the message "
                   "says what failed, `data.kind` is \"store\"",
}


def error_codes() -> dict[str, int]:
    """Every domain error code protocol.py declares, by its constant's name."""
    return {name: value for name, value in vars(p).items()
            if name.startswith("ERROR_") and isinstance(value, int)}


class _Doc:
    """The lines of the document, and which struct types it defined and named."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.defined: set[type] = set()
        self.named: list[type] = []  # in the order first named
        self.named_shapes: dict[str, dict[str, Any]] = {}  # protocol.SCHEMA_DEFS named

    def type(self, t: mi.Type) -> str:
        if isinstance(t, mi.StructType):
            if t.cls not in self.named:
                self.named.append(t.cls)
            return t.cls.__name__
        if isinstance(t, mi.ListType):
            return f"[{self.type(t.item_type)}]"
        if isinstance(t, mi.DictType):
            value = t.value_type
            return "object" if isinstance(value, mi.AnyType) else \
                f"{{{self.type(t.key_type)}: {self.type(value)}}}"
        if isinstance(t, mi.UnionType):
            parts = [self.type(x) for x in t.types if not isinstance(x, mi.NoneType)]
            return " | ".join(parts) + (" | null" if t.includes_none else "")
        if isinstance(t, mi.LiteralType):
            return " / ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in t.values)
        if isinstance(t, mi.Metadata):
            return self._described(t)
        return {mi.StrType: "string", mi.IntType: "int", mi.FloatType: "number",
                mi.BoolType: "bool", mi.NoneType: "null", mi.AnyType: "any"
                }.get(type(t), type(t).__name__)

    def _described(self, t: mi.Metadata) -> str:
        """A type with a schema of its own (protocol.FormatMessages): the message types its
        items may be, and what it says of them; another type with what its description says."""
        extra: dict[str, Any] = t.extra_json_schema or {}
        item = extra.get("items") or {}
        items = item.get("anyOf") or ([item] if "$ref" in item else None)
        if not isinstance(t.type, mi.ListType) or not items:
            # a scalar's description (protocol.AssembledCacheBoundary) says what it counts
            said = extra.get("description")
            return self.type(t.type) + (f" ({said})" if said else "")
        kinds = []
        for item in items:
            name = item.get("$ref", "").removeprefix("#/$defs/")
            cls = getattr(p, name, None) if name else None
            if name in p.SCHEMA_DEFS:  # a shape only the schema has (protocol.SystemTextBlocks)
                self.named_shapes.setdefault(name, p.SCHEMA_DEFS[name])
                kinds.append(name)
                continue
            kinds.append(self.type(mi.type_info(cls)) if cls is not None else
                         item.get("type", "any"))
        said = f" ({extra['description']})" if extra.get("description") else ""
        return f"[{' | '.join(kinds)}]{said}"

    def fields(self, cls: type) -> list[str]:
        rows = []
        for f in mi.type_info(cls).fields:
            opt = "" if f.required else "?"
            default = "" if f.required or f.default in (None, mi.NODEFAULT) else \
                f" (default {f.default!r})"
            rows.append(f"`{f.encode_name}{opt}`: {self.type(f.type)}{default}")
        return rows or ["(no fields)"]

    def section(self, title: str, cls: type) -> None:
        self.defined.add(cls)
        # its docstring's first paragraph (a first line alone stopped mid-sentence)
        first = " ".join(line.strip() for line in
                         (cls.__doc__ or "").strip().split("\n\n")[0].splitlines())
        first = "" if "Wire" in first else first
        head = f"**{title}** `{cls.__name__}`" + (f": {first}" if first else "")
        self.out += [head, "", *[f"- {row}" for row in self.fields(cls)], ""]

    def undefined(self) -> list[type]:
        return [cls for cls in self.named if cls not in self.defined]


def _shape(name: str, schema: dict[str, Any]) -> list[str]:
    """The section of a shape only the schema has (no struct: it is kept as sent)."""
    rows = [f'- `{k}`: "{v["const"]}"' if "const" in v else f"- `{k}`: {v.get('type', 'any')}"
            for k, v in schema.get("properties", {}).items()]
    return [f"**type** `{name}`: {schema.get('description', '')}".rstrip(": "), "", *rows, ""]


def render() -> str:
    doc = _Doc()
    doc.out += [
        "# ctxlayer protocol (generated)", "",
        f"Protocol version {p.PROTOCOL_VERSION}. Generated from `server/ctxlayer/protocol.py` "
        "by `ctxlayer schema --markdown`; do not edit by hand. PROTOCOL.md in the design notes "
        "is the contract; this is its exact shape.", "",
        "## initialize", "",
        "The standard LSP `initialize`; ctxlayer reads `initializationOptions` and answers "
        "its announcement at `capabilities.experimental.ctxlayer`. A bad or unknown option "
        "is named in a warning (`window/showMessage`) and left out; the others still "
        "apply.", ""]
    doc.section("params `initializationOptions`", p.InitializationOptions)
    doc.section("result `capabilities.experimental.ctxlayer`", p.ServerAnnouncement)
    doc.out += ["## Shared types", ""]
    for cls in (p.Message, p.ToolCall, p.AuditEntry, p.Budget, p.ByLayer):
        doc.section("type", cls)
    # what every request's params share (an unknown field refused), said once
    doc.out += ["## Requests (client to server)", "",
                " ".join(inspect.cleandoc(p.Params.__doc__ or "").split()), ""]
    for method, (params, result) in p.REQUESTS.items():
        doc.out += [f"### `{method}`", ""]
        doc.section("params", params)
        doc.section("result", result)
    doc.out += ["## Notifications (server to client)", ""]
    for method, cls in p.NOTIFICATIONS.items():
        doc.out += [f"### `{method}`", ""]
        doc.section("params", cls)
    doc.out += ["## Requests (server to client)", ""]
    for method, (params, result) in p.SERVER_REQUESTS.items():
        doc.out += [f"### `{method}`", ""]
        doc.section("params", params)
        doc.section("result", result)
    doc.out += ["## Other types", "", "The types the fields above name.", ""]
    while missing := doc.undefined():  # a type defined here may name more
        for cls in missing:
            doc.section("type", cls)
    for name, schema in doc.named_shapes.items():
        doc.out += _shape(name, schema)
    return "\n".join(doc.out + _errors())


def _errors() -> list[str]:
    codes = error_codes()
    unsaid = set(codes) - set(ERRORS)
    if unsaid:
        raise KeyError(f"protocol_doc.ERRORS says nothing of {sorted(unsaid)}")
    return ["## Errors", "",
            "- -32700 parse error, -32600 invalid request, -32601 unknown method, -32602 invalid "
            "params (the message names the field, `data.field` too), -32603 internal error",
            *(f"- {code} {ERRORS[name]}" for name, code in sorted(
                codes.items(), key=lambda item: -item[1])), ""]
