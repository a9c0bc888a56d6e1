"""The stand-in provider's answers in the real providers' shapes: error bodies, completions and
messages, and their SSE event streams (OpenAI chunks ending in `data: [DONE]`; Anthropic
message_start / content_block_* / message_delta / message_stop).

Owns the shapes only; what to answer is decided by standin.py. Must not do I/O.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec


class Reply(msgspec.Struct):
    """What the model says: a text, or a call to a tool (name and arguments), after its
    thinking block when it thought (Anthropic only)."""

    text: str = ""
    tool_name: str | None = None
    tool_arguments: dict = msgspec.field(default_factory=dict)
    thinking: dict | None = None
    #: the Responses API's namespace of the tool called (a function inside a `namespace` tool)
    namespace: str | None = None


class Usage(msgspec.Struct):
    """Tokens of one answer: input split into cache reads, cache writes and the rest."""

    prompt: int
    completion: int
    cache_read: int = 0
    cache_write: int = 0


# ---- errors ------------------------------------------------------------------------------

_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                    404: "not_found_error", 405: "invalid_request_error",
                    413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
                    529: "overloaded_error"}
_OPENAI_TYPES = {400: "invalid_request_error", 401: "invalid_request_error",
                 404: "invalid_request_error", 405: "invalid_request_error",
                 429: "requests", 500: "server_error"}
_OPENAI_CODES = {429: "rate_limit_exceeded"}


def error_body(fmt: str, status: int, message: str, *, param: str | None = None,
               code: str | None = None) -> dict:
    """The provider's own error JSON for a status."""
    if fmt == "anthropic":
        return {"type": "error",
                "error": {"type": _ANTHROPIC_TYPES.get(status, "api_error"), "message": message}}
    return {"error": {"message": message, "type": _OPENAI_TYPES.get(status, "server_error"),
                      "param": param, "code": code or _OPENAI_CODES.get(status)}}


FAILURE_MESSAGES = {
    429: "Rate limit reached for requests (stand-in). Please try again in 1s.",
    500: "The server had an error while processing your request (stand-in).",
}


# ---- OpenAI ------------------------------------------------------------------------------

def _openai_usage(u: Usage) -> dict:
    return {"prompt_tokens": u.prompt, "completion_tokens": u.completion,
            "total_tokens": u.prompt + u.completion,
            "prompt_tokens_details": {"cached_tokens": u.cache_read, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0,
                                          "rejected_prediction_tokens": 0}}


def _openai_call(reply: Reply, rid: str) -> dict:
    return {"id": f"call_{rid}", "type": "function",
            "function": {"name": reply.tool_name, "arguments": json.dumps(reply.tool_arguments)}}


def openai_completion(rid: str, model: str, created: int, reply: Reply, usage: Usage) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None,
                               "refusal": None, "annotations": []}
    if reply.tool_name:
        message["tool_calls"] = [_openai_call(reply, rid)]
    return {"id": f"chatcmpl-{rid}", "object": "chat.completion", "created": created,
            "model": model, "system_fingerprint": "fp_standin",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if reply.tool_name else "stop"}],
            "usage": _openai_usage(usage), "service_tier": "default"}


def openai_chunks(rid: str, model: str, created: int, reply: Reply, usage: Usage,
                  include_usage: bool) -> list[bytes]:
    """The SSE events of a streamed completion, one `data:` line each."""
    base = {"id": f"chatcmpl-{rid}", "object": "chat.completion.chunk", "created": created,
            "model": model, "system_fingerprint": "fp_standin"}

    def chunk(delta: dict, finish: str | None = None) -> dict:
        out = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                    "finish_reason": finish}]}
        if include_usage:
            out["usage"] = None
        return out

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    if reply.tool_name:
        call = _openai_call(reply, rid)
        args = call["function"]["arguments"]
        events.append(chunk({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                             "function": {"name": reply.tool_name,
                                                          "arguments": ""}}]}))
        for piece in _pieces(args):
            events.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
        events.append(chunk({}, "tool_calls"))
    else:
        events += [chunk({"content": piece}) for piece in _pieces(reply.text)]
        events.append(chunk({}, "stop"))
    if include_usage:
        events.append({**base, "choices": [], "usage": _openai_usage(usage)})
    return [_sse(None, e) for e in events] + [b"data: [DONE]\n\n"]


def azure_filter_chunk(include_usage: bool) -> bytes:
    """The chunk an Azure OpenAI stream opens with: no choices, the prompt's content filter
    results (and `usage: null` when the usage was asked for)."""
    safe = {"filtered": False, "severity": "safe"}
    chunk: dict = {"choices": [], "created": 0, "id": "", "model": "", "object": "",
                   "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {
                       kind: safe for kind in ("hate", "self_harm", "sexual", "violence")}}]}
    if include_usage:
        chunk["usage"] = None
    return _sse(None, chunk)


# ---- Anthropic ---------------------------------------------------------------------------

def _anthropic_usage(u: Usage, output: int) -> dict:
    return {"input_tokens": u.prompt - u.cache_read - u.cache_write,
            "cache_creation_input_tokens": u.cache_write, "cache_read_input_tokens": u.cache_read,
            "output_tokens": output, "service_tier": "standard"}


def _anthropic_content(reply: Reply, rid: str) -> list[dict]:
    thought = [reply.thinking] if reply.thinking else []
    if reply.tool_name:
        return [*thought, {"type": "tool_use", "id": f"toolu_{rid}", "name": reply.tool_name,
                           "input": reply.tool_arguments}]
    return [*thought, {"type": "text", "text": reply.text}]


def anthropic_message(rid: str, model: str, reply: Reply, usage: Usage) -> dict:
    return {"id": f"msg_{rid}", "type": "message", "role": "assistant", "model": model,
            "content": _anthropic_content(reply, rid),
            "stop_reason": "tool_use" if reply.tool_name else "end_turn", "stop_sequence": None,
            "usage": _anthropic_usage(usage, usage.completion)}


def anthropic_events(rid: str, model: str, reply: Reply, usage: Usage,
                     zero_input_at_close: bool = False) -> list[bytes]:
    """The SSE events of a streamed message, `event:` and `data:` lines each
    (``zero_input_at_close``: its message_delta says `input_tokens: 0`, as Anthropic-compatible
    servers do that count the input in message_start only: envoyproxy/ai-gateway PR 1631)."""
    start = {"id": f"msg_{rid}", "type": "message", "role": "assistant", "model": model,
             "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": _anthropic_usage(usage, 1)}
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start",
                                                         "message": start})]
    blocks = []
    if reply.thinking:
        shown = reply.thinking["thinking"]
        blocks.append(({"type": "thinking", "thinking": "", "signature": ""},
                       [{"type": "thinking_delta", "thinking": p} for p in _pieces(shown)
                        if p] + [{"type": "signature_delta",
                                  "signature": reply.thinking["signature"]}]))
    if reply.tool_name:
        blocks.append(({**_anthropic_content(reply, rid)[-1], "input": {}},
                       [{"type": "input_json_delta", "partial_json": p}
                        for p in _pieces(json.dumps(reply.tool_arguments))]))
    else:
        blocks.append(({"type": "text", "text": ""},
                       [{"type": "text_delta", "text": p} for p in _pieces(reply.text)]))
    for index, (block, deltas) in enumerate(blocks):
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": block}))
        if index == 0:
            events.append(("ping", {"type": "ping"}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use" if reply.tool_name else "end_turn",
                  "stop_sequence": None},
        "usage": {**({"input_tokens": 0} if zero_input_at_close else {}),
                  "output_tokens": usage.completion}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return [_sse(name, data) for name, data in events]


# ---- helpers -----------------------------------------------------------------------------

def _sse(event: str | None, data: dict) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _pieces(text: str, n: int = 3) -> list[str]:
    """A text cut in up to n pieces, as a model streams it (never an empty list)."""
    if not text:
        return [""]
    step = max(1, -(-len(text) // n))
    return [text[i:i + step] for i in range(0, len(text), step)]
