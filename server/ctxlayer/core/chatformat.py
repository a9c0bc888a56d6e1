"""Reading a conversation given as JSON data: a list of ctxlayer Messages (PROTOCOL.md) or the
OpenAI chat format (`tool_calls` with `function`, `tool_call_id`, content as a string, null or
a list of text parts), also wrapped as {"messages": [...]}. Errors name the offending field.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ctxlayer.core.errors import ContextError
from ctxlayer.protocol import Message, ToolCall

_ROLES = ("system", "user", "assistant", "tool")


def _bad(field: str, what: str) -> ContextError:
    return ContextError("invalid", f"{field}: {what}", field=field)


def _content(value: Any, field: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # OpenAI content parts
        texts = []
        for k, part in enumerate(value):
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, str):
                texts.append(part)
            elif not (isinstance(part, dict) and "type" in part):
                raise _bad(f"{field}[{k}]", "expected a text part")
        return "\n".join(texts)
    raise _bad(field, f"expected a string, got {type(value).__name__}")


def _tool_calls(value: Any, field: str) -> list[ToolCall]:
    if not isinstance(value, list):
        raise _bad(field, "expected a list of tool calls")
    calls = []
    for k, call in enumerate(value):
        f = f"{field}[{k}]"
        if not isinstance(call, dict):
            raise _bad(f, "expected an object")
        fn = call.get("function") if isinstance(call.get("function"), dict) else call
        name, args = fn.get("name"), fn.get("arguments", "")
        if not isinstance(call.get("id"), str):
            raise _bad(f"{f}.id", "a tool call needs a string id")
        if not isinstance(name, str):
            raise _bad(f"{f}.name", "a tool call needs a string name")
        if not isinstance(args, str):
            args = msgspec.json.encode(args).decode()
        calls.append(ToolCall(id=call["id"], name=name, arguments=args))
    return calls


def parse_messages(data: Any) -> list[Message]:
    """Messages from decoded JSON, in either format."""
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list):
        raise _bad("messages", "expected a JSON list of messages (or {\"messages\": [...]})")
    out = []
    for i, raw in enumerate(data):
        f = f"messages[{i}]"
        if not isinstance(raw, dict):
            raise _bad(f, "expected an object with role and content")
        role = raw.get("role")
        if role not in _ROLES:
            raise _bad(f"{f}.role", f"expected one of {', '.join(_ROLES)}, got {role!r}")
        fields = {k: v for k, v in raw.items() if k not in ("tool_calls", "tool_call_id", "name")}
        fields["content"] = _content(raw.get("content"), f"{f}.content")
        calls = raw.get("tool_calls", raw.get("toolCalls"))
        if calls:
            fields["toolCalls"] = msgspec.to_builtins(_tool_calls(calls, f"{f}.tool_calls"))
        fields.pop("toolCalls", None) if not calls else None
        if "tool_call_id" in raw:
            fields["toolCallId"] = raw["tool_call_id"]
        try:
            out.append(msgspec.convert(fields, Message))
        except msgspec.ValidationError as exc:
            path = str(exc).rsplit("at `$", 1)
            where = f + (path[1].rstrip("`") if len(path) == 2 else "")
            raise _bad(where, str(exc).split(" - at ")[0]) from None
    return out
