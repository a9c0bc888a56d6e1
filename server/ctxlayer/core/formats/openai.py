"""The OpenAI Chat Completions format: reading `messages` for the engine and writing the kept
ones back as the very dicts the client sent (shortened text in their text parts), repaired so
that every tool message still follows the call it answers.

Owns the reading and writing of this one format; counting rules for images and files are in
media.py, for the reasoning sent back in openai_reasoning.py; it never decides what to keep
(the trim engine does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ctxlayer.core.formats import media
from ctxlayer.core.formats.common import (
    Decoded,
    Encoded,
    audit,
    bad,
    calls_tokens,
    client_id,
    derive_id,
    expect_dict,
    expect_str,
    messages_of,
    new_arguments,
    parts_gone,
    reusable_prefix,
    share_text,
)
from ctxlayer.core.formats.newest_turn import check_openai
from ctxlayer.core.formats.openai_reasoning import (
    ignored,
    last_user,
    reasoning_tokens,
    rule_of,
)
from ctxlayer.core.guessed import BY_FILE_ID, BY_URL
from ctxlayer.core.text import call_line
from ctxlayer.core.tokens import Tokenizer
from ctxlayer.protocol import AuditEntry, Message, ToolCall

# `function` and an assistant's `function_call`: the deprecated function calling the API still
# takes (one call per assistant message, answered by the `function` message after it)
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_ENGINE_ROLE = {"developer": "system", "function": "tool"}
#: Decoded.extra's key: position -> (the text and calls encode wrote for it, the native dict,
#: the audit entries writing it made)
WRITTEN = "written"
#: Decoded.extra's key: (the rule by which the model ignores earlier turns' reasoning, the
#: last user message, before which it applies), openai_reasoning.py
TURN = "turn"


def legacy_call_id(position: int) -> str:
    """The engine's id for the `function_call` of the assistant message at ``position``: the
    legacy format has no ids, and the engine pairs calls and results by id."""
    return f"function_call@{position}"


def _legacy_call(native: dict, where: str, position: int) -> ToolCall:
    fn = expect_dict(native["function_call"], f"{where}.function_call")
    name = expect_str(fn.get("name"), f"{where}.function_call.name", "the function's name")
    args = expect_str(fn.get("arguments", ""), f"{where}.function_call.arguments",
                      "the arguments as JSON text")
    return ToolCall(id=legacy_call_id(position), name=name, arguments=args)


def _answered_call(raw: list, i: int, where: str) -> str:
    """The id of the call a `function` message at ``i`` answers: the assistant message just
    before it (the provider pairs them by place)."""
    prev = raw[i - 1] if i > 0 else None
    if isinstance(prev, dict) and prev.get("role") == "assistant" and \
            prev.get("function_call") is not None:
        return legacy_call_id(i - 1)
    raise bad(where, "a function message answers the function_call of the assistant message "
                     "just before it, and there is none")


def _is_text(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "text"


def _part(part: dict, where: str, counter: Tokenizer, model: object = None) -> tuple[int, str]:
    """(tokens, label) of one non-text part by the rules of the model that reads it (images:
    OpenAI's tiles, Claude's pixels when a Claude model is asked in this format), or a stated
    estimate; the label names it for audit lines."""
    kind = part["type"]
    if kind == "image_url":
        img = expect_dict(part.get("image_url"), f"{where}.image_url")
        url = expect_str(img.get("url"), f"{where}.image_url.url", "the image's url")
        data = media.split_data_url(url)
        size = media.size_of_base64(data[1]) if data else None
        detail = img.get("detail") or "auto"
        tokens = media.image_tokens(model, size, detail)
        # an image the gateway cannot read is a guess (1,105 tokens, 1,600 for Claude), said
        # so, and under the rule of unseen documents: never the reason a request is refused
        unseen = BY_URL if data is None and not url.startswith("data:") \
            and media.image_guessed(model, detail) else ""
        return tokens, media.label("image", tokens, size, unseen=unseen)
    if kind == "input_audio":
        audio = expect_dict(part.get("input_audio"), f"{where}.input_audio")
        data = expect_str(audio.get("data"), f"{where}.input_audio.data", "base64 audio")
        tokens = media.audio_tokens(data, str(audio.get("format", "")))
        return tokens, media.label("audio", tokens)
    if kind == "file":
        f = expect_dict(part.get("file"), f"{where}.file")
        data = f.get("file_data")
        if isinstance(data, str):
            split = media.split_data_url(data)
            data = split[1] if split else data
        tokens = media.pdf_tokens(data if isinstance(data, str) else None)
        name = f.get("filename")
        unseen = BY_FILE_ID if data is None and isinstance(f.get("file_id"), str) else ""
        return tokens, media.label("file", tokens, name=name if isinstance(name, str) else "",
                                   unseen=unseen)
    if kind == "refusal":
        tokens = counter.count(expect_str(part.get("refusal"), f"{where}.refusal"))
        return tokens, media.label("refusal", tokens)
    # a part type this version does not know: costed by its JSON text
    tokens = counter.count(msgspec.json.encode(part).decode())
    return tokens, media.label(kind, tokens)


def _content(value: Any, where: str, counter: Tokenizer, model: object = None
             ) -> tuple[str, int, list[str]]:
    """(the text the engine may shorten, tokens of the other parts, their labels)."""
    if value is None:
        return "", 0, []
    if isinstance(value, str):
        return value, 0, []
    if not isinstance(value, list):
        raise bad(where, f"expected a string, null or a list of parts, got "
                         f"{type(value).__name__}")
    texts, parts, labels = [], 0, []
    for k, part in enumerate(value):
        f = f"{where}[{k}]"
        part = expect_dict(part, f)
        kind = expect_str(part.get("type"), f"{f}.type", "the part's type")
        if kind == "text":
            texts.append(expect_str(part.get("text"), f"{f}.text"))
        else:
            tokens, name = _part(part, f, counter, model)
            parts += tokens
            labels.append(name)
    return "\n".join(texts), parts, labels


def _tool_calls(value: Any, where: str) -> list[ToolCall]:
    if not isinstance(value, list):
        raise bad(where, "expected a list of tool calls")
    calls = []
    for k, call in enumerate(value):
        f = f"{where}[{k}]"
        call = expect_dict(call, f)
        cid = expect_str(call.get("id"), f"{f}.id", "the call's id")
        custom = call.get("type") == "custom"
        if custom:  # its input is free text: `custom` keeps it one in another format
            fn = expect_dict(call.get("custom"), f"{f}.custom")
            name = expect_str(fn.get("name"), f"{f}.custom.name", "the tool's name")
            args = expect_str(fn.get("input", ""), f"{f}.custom.input", "the input as text")
        else:
            fn = expect_dict(call.get("function"), f"{f}.function")
            name = expect_str(fn.get("name"), f"{f}.function.name", "the function's name")
            args = expect_str(fn.get("arguments", ""), f"{f}.function.arguments",
                              "the arguments as JSON text")
        calls.append(ToolCall(id=cid, name=name, arguments=args, custom=custom))
    return calls


def decode(payload: dict, counter: Tokenizer, previous: Decoded | None = None,
           whole: bool = False) -> Decoded:  # whole: a session's messages, no compaction
    raw = messages_of(payload)
    same = reusable_prefix(previous, "openai", raw, counter)
    rule = rule_of(payload)
    turn = last_user(raw) if rule else -1
    if previous is not None and previous.extra.get(TURN, (None, -1)) != (rule, turn):
        # a new turn began: the reasoning of the one before it may be read no more; or a
        # rewind made an earlier turn the one under way: its reasoning is read again
        # (another model's rule: none of it is known)
        was, before = previous.extra.get(TURN, (None, -1))
        same = min(same, min(before, turn) + 1) if was == rule else 0
    unread = ignored(raw, turn, rule) if rule and turn > 0 else frozenset()
    msgs: list[Message] = previous.messages[:same] if previous else []
    if previous is not None and same == len(previous.messages):  # all of it: copies, in C
        index, derived = dict(previous.index), set(previous.derived_ids)
    else:
        index = {m.id: k for k, m in enumerate(msgs)}  # type: ignore[misc]
        derived = {m.id for m in msgs if m.id in previous.derived_ids} if previous else set()
    for i in range(same, len(raw)):
        native = raw[i]
        where = f"messages[{i}]"
        native = expect_dict(native, where)
        role = native.get("role")
        if role not in ROLES:
            raise bad(f"{where}.role", f"expected one of {', '.join(ROLES)}, got {role!r}")
        text, parts, labels = _content(native.get("content"), f"{where}.content", counter,
                                       payload.get("model"))
        if role == "assistant" and isinstance(native.get("refusal"), str):
            refusal = counter.count(native["refusal"])
            parts += refusal
            labels.append(media.label("refusal", refusal))
        thought = reasoning_tokens(native, counter) \
            if role == "assistant" and i not in unread else 0
        if thought:
            parts += thought
            labels.append(media.label("reasoning", thought))
        calls = None
        if native.get("tool_calls") is not None:
            if role != "assistant":
                raise bad(f"{where}.tool_calls", "only an assistant message makes tool calls")
            calls = _tool_calls(native["tool_calls"], f"{where}.tool_calls") or None
        if native.get("function_call") is not None:
            if role != "assistant" or calls:
                raise bad(f"{where}.function_call", "only an assistant message without "
                                                    "tool_calls makes a function_call")
            calls = [_legacy_call(native, where, i)]
        call_id = None
        if role == "tool":
            call_id = expect_str(native.get("tool_call_id"), f"{where}.tool_call_id",
                                 "the id of the tool call this message answers")
        elif role == "function":
            expect_str(native.get("name"), f"{where}.name", "the function's name")
            call_id = _answered_call(raw, i, where)
        if "name" in native:  # the model reads it: its tokens and one to mark it
            parts += counter.count(expect_str(native["name"], f"{where}.name")) + 1
        mid = client_id(native)
        if mid is None:
            mid = derive_id("oa", str(i), role, text, call_id or "",
                            *(c.id for c in calls or ()))
            derived.add(mid)
        if mid in index:
            raise bad(f"{where}.id", f"the same id as messages[{index[mid]}]")
        index[mid] = i
        msgs.append(Message(role=_ENGINE_ROLE.get(role, role), content=text, id=mid,
                            tool_calls=calls, tool_call_id=call_id, parts_tokens=parts or None,
                            parts=labels or None))
    if not whole:  # a session's append goes on from what it holds (newest_turn.py)
        check_openai(raw)
    # what encode wrote for the shared messages the previous turn shortened, kept for this one
    was = previous.extra.get(WRITTEN, {}) if previous is not None else {}
    written = dict(was) if previous is not None and same >= len(previous.messages) else \
        {pos: hit for pos, hit in was.items() if pos < same}  # all shared: copied in C
    return Decoded(fmt="openai", messages=msgs, payload=payload, sources=list(range(len(raw))),
                   index=index, derived_ids=derived, counter=counter,
                   extra={WRITTEN: written, TURN: (rule, turn)})


def _call_of(c: ToolCall) -> dict:
    """An engine call as a Chat Completions tool call: a custom tool's with its input."""
    if c.custom:
        return {"id": c.id, "type": "custom", "custom": {"name": c.name, "input": c.arguments}}
    return {"id": c.id, "type": "function", "function": {"name": c.name,
                                                         "arguments": c.arguments}}


def _native_of(decoded: Decoded, m: Message, notes: list[AuditEntry]) -> dict:
    """The native message of kept message `m`; a text part its shortened text left with
    nothing is named in `notes`."""
    pos = decoded.index.get(m.id) if m.id is not None else None
    if pos is None:  # a message the engine added (a summary, a document): plain text
        if m.role == "tool":
            return {"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content}
        out: dict = {"role": m.role, "content": m.content}
        if m.tool_calls:
            out["content"] = m.content or None
            out["tool_calls"] = [_call_of(c) for c in m.tool_calls]
        return out
    native = decoded.payload["messages"][decoded.sources[pos]]
    if "ctxlayer" in native:
        native = {k: v for k, v in native.items() if k != "ctxlayer"}
    if m is decoded.messages[pos]:  # kept as it came (most of a long chat): nothing to write
        return native
    original = decoded.messages[pos].content
    arguments = new_arguments(decoded.messages[pos], m)
    calls = native.get("tool_calls")
    # one native call a decoded one (a call the reader did not take leaves the calls as sent)
    if arguments is not None and isinstance(calls, list) and len(calls) == len(arguments):
        native = {**native, "tool_calls": [_with_arguments(c, a) for c, a in zip(
            calls, arguments, strict=True)]}
    elif arguments is not None and isinstance(native.get("function_call"), dict) \
            and len(arguments) == 1 and arguments[0] is not None:
        native = {**native, "function_call": {**native["function_call"],
                                              "arguments": arguments[0]}}
    if m.content is original or m.content == original:
        return native
    content = native.get("content")
    if isinstance(content, list):
        parts, gone = share_text(content, m.content, _is_text)
        notes += parts_gone(content, gone, m, f"{m.role} message")
        return {**native, "content": parts}
    return {**native, "content": m.content}


def _with_arguments(call: dict, arguments: str | None) -> dict:
    """A native tool call with its outlined arguments (a custom tool's input); as it came
    when they were not outlined."""
    if arguments is None:
        return call
    if call.get("type") == "custom":
        return {**call, "custom": {**call["custom"], "input": arguments}}
    return {**call, "function": {**call["function"], "arguments": arguments}}


def encode(decoded: Decoded, kept: Sequence[Message], *, cache_breakpoints: Sequence[int] = ()
           ) -> Encoded:
    """The payload with `messages` replaced by the kept ones; OpenAI has no cache markers, so
    `cache_breakpoints` is accepted and ignored."""
    # a message kept as it came (most of a long chat) is its native dict, looked up here
    # without a call: a warm re-trim of 1M tokens writes 270 of them back every turn
    index, sources, natives, msgs = (decoded.index, decoded.sources, decoded.payload["messages"],
                                     decoded.messages)
    # a message shortened as the previous turn shortened it is written as it was then: a warm
    # re-trim of 1M tokens shortens the same 140 messages every turn
    written = decoded.extra.setdefault(WRITTEN, {})
    out = []
    notes: list[AuditEntry] = []
    for m in kept:
        pos = index.get(m.id) if m.id is not None else None
        native = natives[sources[pos]] if pos is not None and m is msgs[pos] else None
        if native is not None and "ctxlayer" not in native:
            out.append(native)
            continue
        hit = written.get(pos) if pos is not None else None
        if hit is not None and hit[0] is m.content and hit[1] is m.tool_calls:
            out.append(hit[2])
            notes += hit[3]
            continue
        made: list[AuditEntry] = []
        native = _native_of(decoded, m, made)
        if pos is not None:
            written[pos] = (m.content, m.tool_calls, native, made)
        out.append(native)
        notes += made
    result = Encoded(payload={}, audit=notes)
    out = _repair_tool_pairs(out, kept, result, decoded)
    result.payload = {**decoded.payload, "messages": out}
    return result


def _fn(call: dict) -> dict:
    """A native call's function (a custom tool's `custom`: its name and input)."""
    fn = call.get("custom" if call.get("type") == "custom" else "function")
    return fn if isinstance(fn, dict) else {}


def _without_calls(msg: dict, pending: dict[str, int], m: Message, result: Encoded,
                   counter: Any) -> dict | None:
    """The assistant message ``msg`` (written from ``m``) without its calls whose results
    never came (``pending``), None when nothing is left of it; the entry names the message
    and what the calls cost."""
    calls = [c for c in msg["tool_calls"] if c.get("id") not in pending]
    gone = [c for c in msg["tool_calls"] if c.get("id") in pending]
    lost = [c.get("id") for c in gone]
    named = [call_line(str(_fn(c).get("name", "")),
                       str(_fn(c).get("arguments", _fn(c).get("input", "")))) for c in gone]
    result.audit.append(audit(
        "dropped", f"tool calls {', '.join(lost)} lost their results: removed so that "
        "the request stays valid", f"assistant: {' + '.join(named)}",
        calls_tokens([m], set(lost), counter), 0, message_id=m.id))
    out = {**msg, "tool_calls": calls} if calls else \
        {k: v for k, v in msg.items() if k != "tool_calls"}
    return out if calls or out.get("content") else None


def _without_function_call(msg: dict, result: Encoded, count: Any, message_id: str | None
                           ) -> dict | None:
    """The assistant message ``msg`` without its `function_call`, whose function result never
    came, None when nothing is left of it; the entry names it and what the call cost."""
    call = msg["function_call"]
    result.audit.append(audit(
        "dropped", "function_call lost its function result: removed so that the request "
        "stays valid", f"assistant: function_call {call.get('name')}",
        count(str(call.get("name", ""))) + count(str(call.get("arguments", ""))), 0,
        message_id=message_id))
    msg = {k: v for k, v in msg.items() if k != "function_call"}
    return msg if msg.get("content") else None


def _repair_tool_pairs(out: list[dict], kept: Sequence[Message], result: Encoded,
                       decoded: Decoded) -> list:
    """Every tool message answers a call of the assistant message just before its run of tool
    messages, and every call has its result: a lone result is dropped, a call left without
    its result is removed from the assistant message (which goes too if nothing is left). The
    same for the legacy `function_call` and the `function` message just after it. ``out[k]``
    is written from ``kept[k]``: each entry names the message and what its removal saved.
    A request that needs no repair (every turn of a chat the fit kept whole groups of) is
    walked once, a few steps a message: a call per message was half of this walk."""
    fixed: list[dict] = []
    origin: list[int] = []  # the position in out of each message of fixed
    pending: dict[str, int] = {}  # call id -> index in fixed of its assistant message
    count = decoded.counter.count if decoded.counter else (lambda s: 0)
    removed = False  # a message was left with nothing (None in fixed)

    def close_calls() -> None:
        nonlocal removed
        for j in sorted(set(pending.values())):
            fixed[j] = _without_calls(fixed[j], pending, kept[origin[j]], result,
                                      decoded.counter)  # type: ignore[call-overload]
            removed = removed or fixed[j] is None
        pending.clear()

    legacy: int | None = None  # index in fixed of an assistant whose function_call waits

    def close_legacy() -> None:
        nonlocal legacy, removed
        j: int = legacy  # type: ignore[assignment]
        fixed[j] = _without_function_call(  # type: ignore[call-overload]
            fixed[j], result, count, kept[origin[j]].id)
        removed = removed or fixed[j] is None
        legacy = None

    in_results = False
    for k, msg in enumerate(out):
        role = msg.get("role")
        if role == "tool" or role == "function":
            if role == "function":  # answers the function_call just before it
                answers = legacy is not None and legacy == len(fixed) - 1
                why, what = ("function result without the function_call before it",
                             f"function {msg.get('name')}")
                if answers:
                    legacy = None
            else:
                cid = msg.get("tool_call_id")
                answers = in_results and cid in pending
                why, what = "tool result without its call: the provider refuses it", f"tool {cid}"
                if answers:
                    del pending[cid]
            if answers:
                fixed.append(msg)
                origin.append(k)
            else:
                text = msg.get("content") if isinstance(msg.get("content"), str) else ""
                result.audit.append(audit("dropped", why, what, count(text), 0,
                                          message_id=kept[k].id))
            continue
        if pending:
            close_calls()
        if legacy is not None:
            close_legacy()
        in_results = False
        fixed.append(msg)
        origin.append(k)
        if role == "assistant":
            if msg.get("tool_calls"):
                for c in msg["tool_calls"]:
                    pending[c.get("id")] = len(fixed) - 1
                in_results = True
            elif msg.get("function_call") is not None:
                legacy = len(fixed) - 1
    if pending:
        close_calls()
    if legacy is not None:
        close_legacy()
    return [m for m in fixed if m is not None] if removed else fixed
