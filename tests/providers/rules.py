"""What the real providers refuse in a request body, as plain checks: the tests of the format
codecs and the stand-in provider server both ask these functions whether a body would be
accepted. Each returns the list of problems (empty: the provider would take it), each problem
naming the place, e.g. "messages[3]: tool message answers no tool call of the assistant message
before it".

Stdlib only, no ctxlayer import: this file states the providers' rules independently of the
code it checks. Strict on purpose: where a provider is lenient in one version and strict in
another, the strict reading is taken.
"""

from __future__ import annotations

import re
from typing import Any

MAX_CACHE_BREAKPOINTS = 4
#: a tool_use id and a tool_result's tool_use_id: the API answers 400 to any other
#: ("messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
_TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")

_OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool")
_OPENAI_PARTS = {
    "system": {"text"},
    "developer": {"text"},
    "user": {"text", "image_url", "input_audio", "file"},
    "assistant": {"text", "refusal"},
    "tool": {"text"},
}

_ANTHROPIC_USER_BLOCKS = {"text", "image", "document", "tool_result", "search_result",
                          "container_upload"}
_ANTHROPIC_ASSISTANT_BLOCKS = {"text", "tool_use", "thinking", "redacted_thinking",
                               "server_tool_use", "web_search_tool_result",
                               "web_fetch_tool_result", "code_execution_tool_result",
                               "bash_code_execution_tool_result",
                               "text_editor_code_execution_tool_result",
                               "tool_search_tool_result",
                               "mcp_tool_use", "mcp_tool_result", "container_upload",
                               # betas: an advisor's result, the provider's own compaction
                               # (what came before it is not read), a fallback hop's marker,
                               # an MCP server's tool listing, each echoed back as it came
                               "advisor_tool_result", "compaction", "fallback",
                               "mcp_tool_listing"}
#: what a system message between turns holds (the mid-conversation-system and -tool-changes
#: betas): instructions, and the tools offered from there on
_ANTHROPIC_SYSTEM_TURN_BLOCKS = {"text", "tool_addition", "tool_removal"}
_ANTHROPIC_RESULT_PARTS = {"text", "image", "document", "search_result", "tool_reference",
                           "browser_state"}


# --- OpenAI Chat Completions ---------------------------------------------------------------


def _openai_part(part: Any, where: str, role: str, out: list[str]) -> None:
    if not isinstance(part, dict):
        out.append(f"{where}: a content part must be an object")
        return
    kind = part.get("type")
    if kind not in _OPENAI_PARTS[role]:
        out.append(f"{where}.type: {kind!r} is not a content part a {role} message may carry")
        return
    if kind == "text" and not isinstance(part.get("text"), str):
        out.append(f"{where}.text: a text part needs a string")
    elif kind == "refusal" and not isinstance(part.get("refusal"), str):
        out.append(f"{where}.refusal: a refusal part needs a string")
    elif kind == "image_url":
        img = part.get("image_url")
        if not isinstance(img, dict) or not isinstance(img.get("url"), str) or not img["url"]:
            out.append(f"{where}.image_url.url: an image part needs a url")
        elif img.get("detail", "auto") not in ("auto", "low", "high"):
            out.append(f"{where}.image_url.detail: must be auto, low or high")
    elif kind == "input_audio":
        audio = part.get("input_audio")
        if not isinstance(audio, dict) or not isinstance(audio.get("data"), str) or \
                audio.get("format") not in ("wav", "mp3"):
            out.append(f"{where}.input_audio: needs data and a format of wav or mp3")
    elif kind == "file":
        f = part.get("file")
        if not isinstance(f, dict) or not (f.get("file_data") or f.get("file_id")):
            out.append(f"{where}.file: needs file_data or file_id")


def _openai_content(msg: dict, where: str, out: list[str]) -> None:
    role, content = msg["role"], msg.get("content")
    if content is None:
        if role == "assistant":
            if not msg.get("tool_calls") and msg.get("refusal") is None and \
                    msg.get("audio") is None and msg.get("function_call") is None:
                out.append(f"{where}.content: an assistant message without tool_calls needs "
                           "content")
        else:
            out.append(f"{where}.content: a {role} message needs content")
        return
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        out.append(f"{where}.content: must be a string or a list of parts")
        return
    if not content:
        out.append(f"{where}.content: an empty list of parts")
    for k, part in enumerate(content):
        _openai_part(part, f"{where}.content[{k}]", role, out)


def _openai_calls(calls: Any, where: str, out: list[str]) -> list[str]:
    if not isinstance(calls, list) or not calls:
        out.append(f"{where}.tool_calls: must be a non-empty list")
        return []
    ids = []
    for k, call in enumerate(calls):
        f = f"{where}.tool_calls[{k}]"
        if not isinstance(call, dict):
            out.append(f"{f}: must be an object")
            continue
        if not isinstance(call.get("id"), str) or not call["id"]:
            out.append(f"{f}.id: a tool call needs an id")
        else:
            ids.append(call["id"])
        if call.get("type", "function") not in ("function", "custom"):
            out.append(f"{f}.type: must be function")
        fn = call.get("function") if call.get("type", "function") == "function" else \
            call.get("custom")
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            out.append(f"{f}.function.name: a tool call needs a function name")
        elif call.get("type", "function") == "function" and \
                not isinstance(fn.get("arguments"), str):
            out.append(f"{f}.function.arguments: must be a string (JSON text)")
    if len(set(ids)) != len(ids):
        out.append(f"{where}.tool_calls: the same id twice")
    return ids


def openai_problems(body: dict) -> list[str]:
    """What the Chat Completions API would refuse in `body` ({"messages": [...], ...})."""
    out: list[str] = []
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not messages:
        return ["messages: must be a non-empty list"]
    pending: dict[str, int] = {}  # call id -> index of the assistant message, still unanswered
    in_results = False  # right after an assistant message with tool_calls, or its results
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(msg, dict):
            out.append(f"{where}: must be an object")
            continue
        role = msg.get("role")
        if role == "function":  # deprecated function calling, still taken
            _openai_function(messages, i, out)
            if pending:
                out.append(f"messages[{min(pending.values())}]: tool calls without results")
                pending, in_results = {}, False
            continue
        if role not in _OPENAI_ROLES:
            out.append(f"{where}.role: {role!r} is not a role")
            continue
        _openai_content(msg, where, out)
        if "name" in msg and not isinstance(msg["name"], str):
            out.append(f"{where}.name: must be a string")
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if not isinstance(call_id, str):
                out.append(f"{where}.tool_call_id: a tool message needs it")
            elif not in_results or call_id not in pending:
                out.append(f"{where}: tool message answers no tool call of the assistant "
                           "message before it")
            else:
                del pending[call_id]
            continue
        if pending:
            first = min(pending.values())
            out.append(f"messages[{first}]: tool calls without results: "
                       f"{', '.join(sorted(pending))}")
            pending = {}
        in_results = False
        if role == "assistant" and msg.get("tool_calls") is not None:
            for call_id in _openai_calls(msg["tool_calls"], where, out):
                pending[call_id] = i
            in_results = True
        elif "tool_calls" in msg and role != "assistant":
            out.append(f"{where}.tool_calls: only an assistant message may carry tool calls")
        if msg.get("function_call") is not None:
            fc = msg["function_call"]
            if role != "assistant" or msg.get("tool_calls") is not None:
                out.append(f"{where}.function_call: only an assistant message without "
                           "tool_calls may carry one")
            elif not isinstance(fc, dict) or not isinstance(fc.get("name"), str) or \
                    not isinstance(fc.get("arguments"), str):
                out.append(f"{where}.function_call: needs a name and arguments (JSON text)")
    if pending:
        out.append(f"messages[{min(pending.values())}]: tool calls without results: "
                   f"{', '.join(sorted(pending))}")
    return out


def _openai_function(messages: list, i: int, out: list[str]) -> None:
    """A `function` message: a name, text content, right after the assistant message whose
    `function_call` it answers."""
    msg, where = messages[i], f"messages[{i}]"
    if not isinstance(msg.get("name"), str):
        out.append(f"{where}.name: a function message needs the function's name")
    if msg.get("content") is not None and not isinstance(msg.get("content"), str):
        out.append(f"{where}.content: a function message's content is text")
    prev = messages[i - 1] if i else None
    if not isinstance(prev, dict) or prev.get("role") != "assistant" or \
            prev.get("function_call") is None:
        out.append(f"{where}: function message answers no function_call of the assistant "
                   "message before it")


# --- Anthropic Messages ------------------------------------------------------------------------


def _count_cache(block: Any) -> int:
    return 1 if isinstance(block, dict) and block.get("cache_control") is not None else 0


def _cache_control(block: dict, where: str, out: list[str]) -> None:
    cc = block.get("cache_control")
    if cc is None:
        return
    if not isinstance(cc, dict) or cc.get("type") != "ephemeral":
        out.append(f"{where}.cache_control: must be {{\"type\": \"ephemeral\"}}")
    elif cc.get("ttl", "5m") not in ("5m", "1h"):
        out.append(f"{where}.cache_control.ttl: must be 5m or 1h")
    if block.get("type") in ("thinking", "redacted_thinking"):
        out.append(f"{where}.cache_control: a thinking block cannot carry it")


def _text_block(block: dict, where: str, out: list[str]) -> None:
    text = block.get("text")
    if not isinstance(text, str):
        out.append(f"{where}.text: a text block needs a string")
    elif not text.strip():
        out.append(f"{where}.text: text blocks must contain non-whitespace text")


def _source(block: dict, where: str, out: list[str], media: tuple[str, ...]) -> None:
    src = block.get("source")
    if not isinstance(src, dict):
        out.append(f"{where}.source: needed")
        return
    kind = src.get("type")
    if kind == "base64":
        if not isinstance(src.get("data"), str) or not src["data"]:
            out.append(f"{where}.source.data: base64 data needed")
        if src.get("media_type") not in media:
            out.append(f"{where}.source.media_type: {src.get('media_type')!r} not accepted")
    elif kind == "url":
        if not isinstance(src.get("url"), str) or not src["url"]:
            out.append(f"{where}.source.url: needed")
    elif kind == "file":
        if not isinstance(src.get("file_id"), str):
            out.append(f"{where}.source.file_id: needed")
    elif kind == "text" and block.get("type") == "document":
        if not isinstance(src.get("data"), str):
            out.append(f"{where}.source.data: a text document needs its text")
    elif kind == "content" and block.get("type") == "document":
        if not isinstance(src.get("content"), str | list):
            out.append(f"{where}.source.content: needed")
    else:
        out.append(f"{where}.source.type: {kind!r} not accepted")


_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _anthropic_block(block: Any, where: str, role: str, out: list[str]) -> None:
    if not isinstance(block, dict):
        out.append(f"{where}: a content block must be an object")
        return
    kind = block.get("type")
    allowed = _ANTHROPIC_USER_BLOCKS if role == "user" else _ANTHROPIC_ASSISTANT_BLOCKS
    if kind not in allowed:
        out.append(f"{where}.type: {kind!r} is not a block a {role} message may carry")
        return
    _cache_control(block, where, out)
    if kind == "text":
        _text_block(block, where, out)
    elif kind == "image":
        _source(block, where, out, _IMAGE_TYPES)
    elif kind == "document":
        _source(block, where, out, ("application/pdf", "text/plain"))
    elif kind in ("tool_use", "server_tool_use"):
        if not isinstance(block.get("id"), str) or not block["id"]:
            out.append(f"{where}.id: a tool_use block needs an id")
        elif kind == "tool_use" and not _TOOL_USE_ID.fullmatch(block["id"]):
            out.append(f"{where}.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
        if not isinstance(block.get("name"), str):
            out.append(f"{where}.name: a tool_use block needs a name")
        if not isinstance(block.get("input"), dict):
            out.append(f"{where}.input: must be an object")
    elif kind == "tool_result":
        if not isinstance(block.get("tool_use_id"), str):
            out.append(f"{where}.tool_use_id: a tool_result block needs it")
        elif not _TOOL_USE_ID.fullmatch(block["tool_use_id"]):
            out.append(f"{where}.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$'")
        content = block.get("content")
        if isinstance(content, list):
            for k, part in enumerate(content):
                f = f"{where}.content[{k}]"
                if not isinstance(part, dict) or part.get("type") not in _ANTHROPIC_RESULT_PARTS:
                    out.append(f"{f}.type: not a block a tool_result may hold")
                    continue
                _cache_control(part, f, out)
                if part["type"] == "text":
                    _text_block(part, f, out)
                elif part["type"] == "image":
                    _source(part, f, out, _IMAGE_TYPES)
        elif content is not None and not isinstance(content, str):
            out.append(f"{where}.content: must be a string or a list of blocks")
    elif kind == "thinking":
        if not isinstance(block.get("thinking"), str):
            out.append(f"{where}.thinking: needs a string")
        if not isinstance(block.get("signature"), str):
            out.append(f"{where}.signature: needs a string")
    elif kind == "redacted_thinking" and not isinstance(block.get("data"), str):
        out.append(f"{where}.data: needs a string")


def _blocks_of(msg: dict) -> list:
    content = msg.get("content")
    return content if isinstance(content, list) else []


def anthropic_problems(body: dict) -> list[str]:
    """What the Messages API would refuse in `body` ({"system"?, "messages": [...], ...})."""
    out: list[str] = []
    if not isinstance(body, dict):
        return ["body: must be an object"]
    # a request-level cache_control (automatic caching) places one breakpoint of the four
    breakpoints = _count_cache(body)
    system = body.get("system")
    if isinstance(system, list):
        for k, block in enumerate(system):
            where = f"system[{k}]"
            if not isinstance(block, dict) or block.get("type") != "text":
                out.append(f"{where}.type: system blocks must be text")
                continue
            _text_block(block, where, out)
            _cache_control(block, where, out)
            breakpoints += _count_cache(block)
    elif system is not None and not isinstance(system, str):
        out.append("system: must be a string or a list of text blocks")
    for tool in body.get("tools") or []:
        breakpoints += _count_cache(tool)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*out, "messages: must be a non-empty list"]
    prev_role = None
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(msg, dict):
            out.append(f"{where}: must be an object")
            continue
        role = msg.get("role")
        if role not in ("user", "assistant"):
            out.append(f"{where}.role: must be user or assistant, got {role!r}")
            continue
        if i == 0 and role != "user":
            out.append(f"{where}: the first message must be from the user")
        if role == prev_role:
            out.append(f"{where}: roles must alternate (two {role} messages in a row)")
        prev_role = role
        content = msg.get("content")
        if isinstance(content, str):
            if not content.strip() and not (role == "assistant" and i == len(messages) - 1):
                out.append(f"{where}.content: must be non-empty")
        elif isinstance(content, list):
            if not content:
                out.append(f"{where}.content: must be non-empty")
            for k, block in enumerate(content):
                _anthropic_block(block, f"{where}.content[{k}]", role, out)
                breakpoints += _count_cache(block)
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    for part in block.get("content") or []:
                        breakpoints += _count_cache(part) if isinstance(part, dict) else 0
        else:
            out.append(f"{where}.content: must be a string or a list of blocks")
    out += _anthropic_tool_pairs(messages)
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        out.append(f"cache_control: {breakpoints} breakpoints, at most "
                   f"{MAX_CACHE_BREAKPOINTS} allowed")
    return out


def _anthropic_tool_pairs(messages: list) -> list[str]:
    """Every tool_use is answered by a tool_result in the very next (user) message, and every
    tool_result answers a tool_use of the message just before it."""
    out = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            continue
        prev = messages[i - 1] if i > 0 and isinstance(messages[i - 1], dict) else {}
        asked = {b.get("id") for b in _blocks_of(prev) if isinstance(b, dict)
                 and b.get("type") == "tool_use"} if prev.get("role") == "assistant" else set()
        results = [b for b in _blocks_of(msg) if isinstance(b, dict)
                   and b.get("type") == "tool_result"]
        for k, b in enumerate(_blocks_of(msg)):
            if isinstance(b, dict) and b.get("type") == "tool_result" and \
                    b.get("tool_use_id") not in asked:
                out.append(f"messages[{i}].content[{k}]: tool_result {b.get('tool_use_id')!r} "
                           "answers no tool_use of the message before it")
        if msg.get("role") == "assistant":
            calls = [b.get("id") for b in _blocks_of(msg) if isinstance(b, dict)
                     and b.get("type") == "tool_use"]
            nxt = messages[i + 1] if i + 1 < len(messages) and \
                isinstance(messages[i + 1], dict) else {}
            answered = {b.get("tool_use_id") for b in _blocks_of(nxt) if isinstance(b, dict)
                        and b.get("type") == "tool_result"}
            missing = [c for c in calls if c not in answered]
            if missing:
                out.append(f"messages[{i}]: tool_use ids without a tool_result in the next "
                           f"message: {', '.join(map(str, missing))}")
        if results and msg.get("role") == "user":
            blocks = _blocks_of(msg)
            first_other = next((k for k, b in enumerate(blocks) if not (
                isinstance(b, dict) and b.get("type") == "tool_result")), len(blocks))
            if any(isinstance(b, dict) and b.get("type") == "tool_result"
                   for b in blocks[first_other:]):
                out.append(f"messages[{i}]: tool_result blocks must come before other content")
    return out
