"""What the stand-in provider refuses, as the real providers do: the payload checks and the
token count it measures a request against the model's window with.

Owns: `problems(fmt, body) -> list[str]` and `prompt_tokens(fmt, body) -> int`. The checks
below answer the common refusals in the providers' own words (what an SDK user sees); a body
they pass then goes through the strict, independent checkers of `tests/providers/rules.py`
when that file is there, so the stand-in refuses everything either knows. Must not do I/O.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

if str(Path(__file__).parent) not in sys.path:  # imported as providers.standin_checks
    sys.path.insert(0, str(Path(__file__).parent))

import standin_thinking as thinking
from standin_images import media_tokens

from ctxlayer.tokenizers import counter_for

try:  # the strict checkers
    from rules import _ANTHROPIC_SYSTEM_TURN_BLOCKS as SYSTEM_TURN_BLOCKS
    from rules import anthropic_problems as _rules_anthropic  # type: ignore[import-not-found]
    from rules import openai_problems as _rules_openai  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on what is merged
    _rules_openai = _rules_anthropic = None
    SYSTEM_TURN_BLOCKS = {"text"}

OPENAI_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}


#: the beta that lets Anthropic messages hold `role: "system"` between turns
MID_SYSTEM_BETA = "mid-conversation-system-"
#: the betas that admit them: that one, and `per-turn-control-*`, which Claude Code 2.1.332
#: sends (alone) with system messages between turns on its first try
SYSTEM_BETAS = (MID_SYSTEM_BETA, "per-turn-control-")


def betas_of(headers: Any) -> list[str]:
    """The `anthropic-beta` names of a request's headers (comma-separated, maybe repeated)."""
    values = headers.getall("anthropic-beta", []) if hasattr(headers, "getall") else \
        [v for k, v in dict(headers).items() if k.lower() == "anthropic-beta"]
    return [b.strip() for v in values for b in v.split(",") if b.strip()]


def problems(fmt: str, body: Any, betas: Any = ()) -> list[str]:
    """Every reason the provider of `fmt` ("openai" | "anthropic") would refuse `body`, sent
    with the `anthropic-beta` names `betas`."""
    if not isinstance(body, dict):
        return ["body: expected a JSON object"]
    if fmt == "openai":
        own = _openai_problems(body)
        return own or (_rules_openai(body) if _rules_openai else [])
    msgs = body.get("messages")
    if any(b.startswith(SYSTEM_BETAS) for b in betas) and isinstance(msgs, list):
        placed = mid_system_problems(msgs)
        if breakpoints(body) > 4:
            placed.append("A maximum of 4 blocks with cache_control may be provided.")
        # the rest is checked on the turns alone, as the provider reads them
        body = {**body, "messages": [m for m in msgs if not (
            isinstance(m, dict) and m.get("role") == "system")]}
        if placed:
            return placed
    own = _anthropic_problems(body) + compaction_problems(body.get("messages") or [])
    return own or (_rules_anthropic(body) if _rules_anthropic else [])


def mid_system_problems(msgs: list) -> list[str]:
    """The placement rules of system messages between turns: never first, right after a user
    message (or an assistant one ending in a server tool use), followed by an assistant turn
    or nothing, never two in a row, text blocks only."""
    out: list[str] = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("role") != "system":
            continue
        where = f"messages.{i}"
        prev = msgs[i - 1] if i > 0 and isinstance(msgs[i - 1], dict) else None
        nxt = msgs[i + 1] if i + 1 < len(msgs) and isinstance(msgs[i + 1], dict) else None
        if prev is None:
            out.append(f"{where}: a system message cannot be the first message")
        elif prev.get("role") == "system" or (nxt is not None and nxt.get("role") == "system"):
            out.append(f"{where}: consecutive system messages are not allowed")
        elif prev.get("role") != "user" and not _ends_in_server_tool(prev):
            out.append(f"{where}: a system message must immediately follow a user message")
        if nxt is not None and nxt.get("role") not in ("assistant", "system"):
            out.append(f"{where}: a system message must be last or followed by an assistant "
                       "message")
        content = m.get("content")
        if isinstance(content, str):
            if not content.strip():
                out.append(f"{where}.content: must be non-empty")
        elif isinstance(content, list) and content:
            for k, b in enumerate(content):
                kind = b.get("type") if isinstance(b, dict) else None
                if kind not in SYSTEM_TURN_BLOCKS or (
                        kind == "text" and not isinstance(b.get("text"), str)) or (
                        kind != "text" and not isinstance(b.get("tool"), dict)):
                    out.append(f"{where}.content.{k}: system messages hold text blocks and "
                               "tool changes only")
        else:
            out.append(f"{where}.content: must be a non-empty string or list of blocks")
    return out


def _ends_in_server_tool(msg: dict) -> bool:
    content = msg.get("content")
    return msg.get("role") == "assistant" and isinstance(content, list) and bool(content) \
        and isinstance(content[-1], dict) and content[-1].get("type") == "server_tool_use"


#: OpenAI's reasoning models (o-series, gpt-5 but its chat snapshots) refuse `max_tokens`
REASONING = ("o1", "o3", "o4", "gpt-5")


def _reasoning(model: str) -> bool:
    return model.startswith(REASONING) and not model.startswith(("gpt-5-chat", "gpt-5.1-chat"))


def _openai_problems(body: dict) -> list[str]:
    out: list[str] = []
    if not isinstance(body.get("model"), str) or not body["model"]:
        out.append("model: you must provide a model parameter")
    elif "max_tokens" in body and _reasoning(body["model"]):
        out.append("Unsupported parameter: 'max_tokens' is not supported with this model. "
                   "Use 'max_completion_tokens' instead.")
    for key in ("max_tokens", "max_completion_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            out.append(f"Invalid '{key}': integer below minimum value. Expected a value >= 1, "
                       f"but got {value} instead.")
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
    return out + _deepseek_problems(body, msgs)


def _deepseek_problems(body: dict, msgs: list) -> list[str]:
    """DeepSeek in thinking mode (the chat sends reasoning back) refuses a tool call whose
    assistant message lost its `reasoning_content`: a turn that called tools is read whole."""
    if "deepseek" not in str(body.get("model", "")).lower() or not any(
            isinstance(m, dict) and m.get("reasoning_content") for m in msgs):
        return []
    return [f"messages[{i}]: The `reasoning_content` in the thinking mode must be passed back "
            "to the API." for i, m in enumerate(msgs) if isinstance(m, dict)
            and m.get("role") == "assistant" and m.get("tool_calls")
            and not m.get("reasoning_content")]


def _anthropic_problems(body: dict) -> list[str]:
    out: list[str] = []
    if not isinstance(body.get("model"), str) or not body["model"]:
        out.append("model: Field required")
    if not isinstance(body.get("max_tokens"), int) or isinstance(body.get("max_tokens"), bool):
        out.append("max_tokens: Field required")
    elif body["max_tokens"] < 1:
        out.append("max_tokens: Input should be greater than or equal to 1")
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        out.append("system: Input should be a valid string or list of text blocks")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return [*out, "messages: Field required (a non-empty list)"]
    found = breakpoints(body)
    if found > 4:
        out.append(f"A maximum of 4 blocks with cache_control may be provided. Found {found}.")
    out += ttl_order(body)
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
            for j, b in enumerate(blocks):
                if isinstance(b, dict) and b.get("type") == "tool_use" \
                        and not isinstance(b.get("input"), dict):
                    out.append(f"{where}.content.{j}.tool_use.input: Input should be a valid "
                               "dictionary")
    return out


def ttl_order(body: dict) -> list[str]:
    """The provider reads the breakpoints in prompt order (tools, system, messages; a block's
    inner parts before the block) and refuses a 1-hour one after a 5-minute one."""
    ttls: list[str] = []
    todo: list[tuple[bool, Any]] = [(False, v) for v in reversed(
        [body.get("tools"), body.get("system"), body.get("messages")])]
    while todo:
        is_mark, v = todo.pop()
        if is_mark:
            ttls.append(v)
        elif isinstance(v, dict):
            cc = v.get("cache_control")
            if isinstance(cc, dict):
                todo.append((True, str(cc.get("ttl", "5m"))))
            todo.extend((False, x) for k, x in reversed(list(v.items())) if k != "cache_control")
        elif isinstance(v, list):
            todo.extend((False, x) for x in reversed(v))
    short = next((k for k, t in enumerate(ttls) if t != "1h"), None)
    if short is not None and "1h" in ttls[short:]:
        return ["a ttl='1h' cache_control block must not come after a ttl='5m' cache_control "
                "block: longer lifetimes come first"]
    return []


def breakpoints(body: dict) -> int:
    """The cache breakpoints of an Anthropic request: its blocks' marks, and the one a
    request-level `cache_control` asks the provider to place (automatic caching), which
    counts among the four as well."""
    return (isinstance(body.get("cache_control"), dict) + _cache_controls(body.get("system"))
            + _cache_controls(body.get("messages")) + _cache_controls(body.get("tools")))


def _cache_controls(value: Any) -> int:
    """The cache_control markers at any depth (a walk without recursion: a tool's input may be
    nested deeper than Python recurses, and the provider takes it)."""
    found, todo = 0, [value]
    while todo:
        v = todo.pop()
        if isinstance(v, dict):
            found += isinstance(v.get("cache_control"), dict)
            todo.extend(x for k, x in v.items() if k != "cache_control")
        elif isinstance(v, list):
            todo.extend(v)
    return found


def _texts(value: Any) -> list[str]:
    """Every text a provider tokenizes in a message or block: strings, and the JSON of tool
    arguments and inputs (ids, types and roles are framing, counted per message)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    if not isinstance(value, dict):
        return []
    if value.get("type") == "thinking":  # the whole thinking, whatever its text shows
        full = thinking.full_text(value)
        return [full if full is not None else str(value.get("thinking", ""))]
    out: list[str] = []
    # reasoning sent back on a Chat Completions turn (DeepSeek's, OpenRouter's) is read again
    for key in ("content", "text", "thinking", "reasoning_content", "reasoning"):
        out += _texts(value.get(key))
    if "input" in value:
        out.append(json.dumps(value["input"]))
    for key in ("function", "function_call"):  # a tool call's, or the deprecated call's
        fn = value.get(key)
        if isinstance(fn, dict):
            out += [str(fn.get("name", "")), str(fn.get("arguments", ""))]
    for call in value.get("tool_calls") or []:
        out += _texts(call)
    if value.get("type") == "document":  # a text document is billed as its text
        source = value.get("source") if isinstance(value.get("source"), dict) else {}
        if source.get("type") == "text":
            out.append(str(source.get("data", "")))
        elif source.get("type") == "content":
            out += _texts(source.get("content"))
        else:
            out.append("x" * 340)  # about 85 tokens (images: standin_images.py)
    return out


def prompt_tokens(fmt: str, body: dict) -> int:
    """The request's input tokens, counted offline with the model's encoding: content texts,
    tool definitions, 4 tokens of framing per message (its role among them), a message's `name`
    and one more, and 3 to prime the reply: OpenAI's cookbook, which matches its API."""
    counter = counter_for(body.get("model") if isinstance(body.get("model"), str) else None)
    msgs = body.get("messages") if isinstance(body.get("messages"), list) else []
    if fmt == "anthropic":
        msgs = after_compaction(msgs)
    texts: list[str] = _texts(body.get("system")) if fmt == "anthropic" else []
    dropped = thinking.stripped(body) if fmt == "anthropic" else _reasoning_ignored(body, msgs)
    for i, m in enumerate(msgs):
        if i in dropped and isinstance(m.get("content"), list):  # its thinking is not read
            m = {**m, "content": [b for b in m["content"] if not (
                isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking"))]}
        elif i in dropped:  # an earlier turn's reasoning the model does not read again
            m = {k: v for k, v in m.items()
                 if k not in ("reasoning_content", "reasoning", "reasoning_details")}
        texts += _texts(m)
    for key in ("tools", "functions"):  # the deprecated `functions` are billed as tools are
        if body.get(key):
            texts.append(json.dumps(shown_tools(body[key])))
    texts += loaded_by_references(body, msgs)
    names = [m["name"] for m in msgs if fmt == "openai" and isinstance(m, dict)
             and isinstance(m.get("name"), str)]
    return sum(counter.count(t) for t in [*texts, *names]) + len(names) + media_tokens(msgs) \
        + 4 * len(msgs) + 3


def shown_tools(tools: Any) -> Any:
    """The tools the provider puts in the prompt: not those deferred to a tool search (tool
    search in both APIs: `defer_loading`)."""
    return [t for t in tools if not (isinstance(t, dict) and t.get("defer_loading") is True)] \
        if isinstance(tools, list) else tools


def loaded_by_references(body: dict, msgs: list) -> list[str]:
    """The definitions of the deferred tools that `tool_reference` blocks load, once per
    reference, as the provider expands them where they stand."""
    deferred = {t.get("name"): t for t in body.get("tools") or ()
                if isinstance(t, dict) and t.get("defer_loading") is True}
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("type") == "tool_reference" and value.get("tool_name") in deferred:
                out.append(json.dumps(deferred[value["tool_name"]]))
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
    if deferred:
        walk(msgs)
    return out


def _reasoning_ignored(body: dict, msgs: list) -> set[int]:
    """The assistant messages whose reasoning (`reasoning_content`, OpenRouter's `reasoning` and
    `reasoning_details`) the model ignores: DeepSeek, as its thinking-mode guide says, those of
    a turn between two user messages in which no tool was called; Claude behind OpenRouter, on
    the models that keep only the last turn's thinking, all before the last user message."""
    model = str(body.get("model", "")).lower()
    users = [i for i, m in enumerate(msgs) if isinstance(m, dict) and m.get("role") == "user"]
    if "claude" in model and not thinking.every_turn({"model": model}):
        return {i for i in range(users[-1] if users else 0)
                if isinstance(msgs[i], dict) and msgs[i].get("role") == "assistant"}
    if "deepseek" not in model:
        return set()
    out: set[int] = set()
    for start, end in zip(users, users[1:], strict=False):
        turn = [i for i in range(start + 1, end)
                if isinstance(msgs[i], dict) and msgs[i].get("role") == "assistant"]
        if not any(msgs[i].get("tool_calls") for i in turn):
            out.update(turn)
    return out


def _compactions(msgs: list) -> list[tuple[int, int]]:
    """(message, block) of each `compaction` block with content (the provider's summary)."""
    return [(i, k) for i, m in enumerate(msgs) if isinstance(m, dict)
            and isinstance(m.get("content"), list) for k, b in enumerate(m["content"])
            if isinstance(b, dict) and b.get("type") == "compaction" and b.get("content")]


def after_compaction(msgs: list) -> list:
    """What the provider reads of the messages: from the last compaction block on (it drops
    every block before it: the compact_* edit's beta)."""
    found = _compactions(msgs)
    if not found:
        return msgs
    i, k = found[-1]
    return [{**msgs[i], "content": msgs[i]["content"][k:]}, *msgs[i + 1:]]


def compaction_problems(msgs: list) -> list[str]:
    if len(_compactions(msgs)) > 1:
        return ["messages: holds more than one `compaction` block with content; send only the "
                "block the conversation returned last (compaction_block_ambiguous)"]
    return []


def message_tokens(fmt: str, model: str | None, message: Any) -> int:
    """One message's tokens, framing included (for the cache-read prefix)."""
    counter = counter_for(model)
    return sum(counter.count(t) for t in _texts(message)) + media_tokens(message) + 3
