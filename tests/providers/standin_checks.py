"""What the stand-in provider refuses, as the real providers do: the payload checks and the
token count it measures a request against the model's window with.

Owns: `problems(fmt, body) -> list[str]` and `prompt_tokens(fmt, body) -> int`. The checks
below answer the common refusals in the providers' own words (what an SDK user sees); a body
they pass then goes through the strict, independent checkers of `tests/providers/rules.py`
when that file is there, so the stand-in refuses everything either knows. Must not do I/O.
"""

from __future__ import annotations

import json
from typing import Any

from ctxlayer.tokenizers import counter_for

try:  # the strict checkers
    from rules import anthropic_problems as _rules_anthropic  # type: ignore[import-not-found]
    from rules import openai_problems as _rules_openai  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on what is merged
    _rules_openai = _rules_anthropic = None

OPENAI_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}


def problems(fmt: str, body: Any) -> list[str]:
    """Every reason the provider of `fmt` ("openai" | "anthropic") would refuse `body`."""
    if not isinstance(body, dict):
        return ["body: expected a JSON object"]
    if fmt == "openai":
        own = _openai_problems(body)
        return own or (_rules_openai(body) if _rules_openai else [])
    own = _anthropic_problems(body)
    return own or (_rules_anthropic(body) if _rules_anthropic else [])


def _openai_problems(body: dict) -> list[str]:
    out: list[str] = []
    if not isinstance(body.get("model"), str) or not body["model"]:
        out.append("model: you must provide a model parameter")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return [*out, "messages: must be a non-empty array"]
    pending: dict[str, int] = {}  # tool call id -> index of the assistant message
    for i, m in enumerate(msgs):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            out.append(f"{where}: expected an object")
            continue
        role = m.get("role")
        if role not in OPENAI_ROLES:
            out.append(f"{where}.role: invalid value {role!r}")
            continue
        if role == "tool":
            tid = m.get("tool_call_id")
            if tid not in pending:
                out.append(f"{where}: messages with role 'tool' must be a response to a preceeding "
                           f"message with 'tool_calls' (tool_call_id {tid!r})")
            else:
                del pending[tid]
            continue
        if pending:
            ids = ", ".join(sorted(pending))
            out.append(f"{where}: an assistant message with 'tool_calls' must be followed by tool "
                       f"messages responding to each 'tool_call_id'. Missing: {ids}")
            pending.clear()
        if "content" not in m and not (role == "assistant" and m.get("tool_calls")):
            out.append(f"{where}.content: missing required parameter")
        if role == "assistant":
            for j, call in enumerate(m.get("tool_calls") or []):
                if not isinstance(call, dict) or not isinstance(call.get("id"), str):
                    out.append(f"{where}.tool_calls[{j}].id: missing required parameter")
                    continue
                pending[call["id"]] = i
    if pending:
        out.append("messages: an assistant message with 'tool_calls' must be followed by tool "
                   f"messages responding to each 'tool_call_id'. Missing: {', '.join(pending)}")
    return out


def _anthropic_problems(body: dict) -> list[str]:
    out: list[str] = []
    if not isinstance(body.get("model"), str) or not body["model"]:
        out.append("model: Field required")
    if not isinstance(body.get("max_tokens"), int) or isinstance(body.get("max_tokens"), bool):
        out.append("max_tokens: Field required")
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        out.append("system: Input should be a valid string or list of text blocks")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return [*out, "messages: Field required (a non-empty list)"]
    breakpoints = _cache_controls(system) + _cache_controls(msgs) + _cache_controls(
        body.get("tools"))
    if breakpoints > 4:
        out.append(f"A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}.")
    previous_uses: set[str] = set()
    for i, m in enumerate(msgs):
        where = f"messages.{i}"
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            out.append(f"{where}.role: Input should be 'user' or 'assistant'")
            previous_uses = set()
            continue
        if i == 0 and m["role"] != "user":
            out.append("messages.0.role: first message must use the \"user\" role")
        if i > 0 and isinstance(msgs[i - 1], dict) and msgs[i - 1].get("role") == m["role"]:
            out.append(f"{where}: roles must alternate between \"user\" and \"assistant\"")
        content = m.get("content")
        if not isinstance(content, (str, list)):
            out.append(f"{where}.content: Field required")
            previous_uses = set()
            continue
        blocks = content if isinstance(content, list) else []
        results = {b.get("tool_use_id") for b in blocks
                   if isinstance(b, dict) and b.get("type") == "tool_result"}
        if m["role"] == "user":
            for tid in sorted(str(t) for t in results - previous_uses):
                out.append(f"{where}.content: unexpected `tool_use_id` found in `tool_result` "
                           f"blocks: {tid}. Each `tool_result` block must have a corresponding "
                           "`tool_use` block in the previous message.")
            missing = previous_uses - results
            if missing:
                out.append(f"{where}: `tool_use` ids were found without `tool_result` blocks "
                           f"immediately after: {', '.join(sorted(missing))}")
            previous_uses = set()
        else:
            if results:
                out.append(f"{where}.content: tool_result blocks are only allowed in user messages")
            previous_uses = {b.get("id") for b in blocks
                             if isinstance(b, dict) and b.get("type") == "tool_use"}
    return out


def _cache_controls(value: Any) -> int:
    if isinstance(value, dict):
        here = 1 if isinstance(value.get("cache_control"), dict) else 0
        return here + sum(_cache_controls(v) for k, v in value.items() if k != "cache_control")
    if isinstance(value, list):
        return sum(_cache_controls(v) for v in value)
    return 0


def _texts(value: Any) -> list[str]:
    """Every text a provider tokenizes in a message or block: strings, and the JSON of tool
    arguments and inputs (ids, types and roles are framing, counted per message)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    if not isinstance(value, dict):
        return []
    out: list[str] = []
    for key in ("content", "text", "thinking"):
        out += _texts(value.get(key))
    if "input" in value:
        out.append(json.dumps(value["input"]))
    fn = value.get("function")
    if isinstance(fn, dict):
        out += [str(fn.get("name", "")), str(fn.get("arguments", ""))]
    for call in value.get("tool_calls") or []:
        out += _texts(call)
    if value.get("type") in ("image", "image_url", "document"):
        out.append("x" * 340)  # about 85 tokens: a small image's published cost
    return out


def prompt_tokens(fmt: str, body: dict) -> int:
    """The request's input tokens, counted offline with the model's encoding: content texts,
    tool definitions, 3 tokens of framing per message and 3 to prime the reply."""
    counter = counter_for(body.get("model") if isinstance(body.get("model"), str) else None)
    msgs = body.get("messages") if isinstance(body.get("messages"), list) else []
    texts: list[str] = _texts(body.get("system")) if fmt == "anthropic" else []
    for m in msgs:
        texts += _texts(m)
    if body.get("tools"):
        texts.append(json.dumps(body["tools"]))
    return sum(counter.count(t) for t in texts) + 3 * len(msgs) + 3


def message_tokens(fmt: str, model: str | None, message: Any) -> int:
    """One message's tokens, framing included (for the cache-read prefix)."""
    counter = counter_for(model)
    return sum(counter.count(t) for t in _texts(message)) + 3
