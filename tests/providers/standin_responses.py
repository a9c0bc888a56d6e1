"""The stand-in's OpenAI Responses API: what it refuses (as strictly as the provider), what it
counts, and its answers (a response object, or its SSE events) in the provider's shapes.

Strict: every item has a known type and the fields of that type; every `function_call_output`
answers a `function_call` before it with the same `call_id`, every call has its output; a
`reasoning` item is followed by the item it led to, and its `encrypted_content` is intact
(the stand-in's own: a payload and its digest, see `encrypted`). `previous_response_id` must
name a response the stand-in gave, `conversation` one made with `POST /v1/conversations`;
its history then counts as input. A reasoning item counts its sealed reasoning (not its
summary) where the provider renders it again: every turn's with `reasoning.context:
"all_turns"` or, left to the model, on the gpt-5.6 family and later (and names not of
OpenAI's); else only those after the last user message, as the official SDK's reference for
`reasoning.context` says (the rest costs nothing). Tools with `defer_loading` count only as a
`tool_search_output` loads them; an `additional_tools` item's tools count as `tools` do, and
the model may call them (a function inside a `namespace` tool by its name and namespace). An `item_reference` stands for the item of that id the
stand-in gave in a response it stored (`store` not false), read and counted as that item; one
it cannot find is refused. Items before a `compaction` item count as any other (the API
reads the user messages a compaction window keeps before it; what it does with the rest is not
said, so the stand-in takes the count that can only be higher).
Owns the shapes only; standin.py decides what to answer. Must not do I/O.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

if str(Path(__file__).parent) not in sys.path:  # imported as providers.standin_responses
    sys.path.insert(0, str(Path(__file__).parent))

from standin_answers import Reply, Usage, _pieces
from standin_images import media_tokens

from ctxlayer.tokenizers import counter_for

#: a tool call the client runs, and the output that answers it by `call_id` (a
#: `local_shell_call_output` by its `id`): an output needs its call, a call its output
CALL_OUTPUTS = {"function_call": "function_call_output",
                "custom_tool_call": "custom_tool_call_output",
                "local_shell_call": "local_shell_call_output", "shell_call": "shell_call_output",
                "apply_patch_call": "apply_patch_call_output",
                "computer_call": "computer_call_output"}
#: the input items the Responses API takes (the official SDK's `ResponseInputItemParam`)
ITEM_TYPES = ("message", "reasoning", "item_reference", *CALL_OUTPUTS, *CALL_OUTPUTS.values(),
              "web_search_call", "file_search_call", "code_interpreter_call",
              "image_generation_call", "mcp_call", "mcp_list_tools", "mcp_approval_request",
              "mcp_approval_response", "tool_search_call", "tool_search_output", "compaction",
              "compaction_trigger", "additional_tools", "configuration_update", "program",
              "program_output")
ROLES = ("user", "system", "developer", "assistant")
INPUT_PARTS = ("input_text", "input_image", "input_file", "input_audio")
OUTPUT_PARTS = ("output_text", "refusal")


def encrypted(payload: str) -> str:
    """An encrypted_content the stand-in accepts back: the payload and its digest, base64."""
    digest = hashlib.sha256(payload.encode()).hexdigest()[:16]
    return base64.b64encode(f"{payload}|{digest}".encode()).decode()


def intact(content: Any) -> bool:
    try:
        payload, digest = base64.b64decode(content, validate=True).decode().rsplit("|", 1)
    except (ValueError, TypeError):
        return False
    return hashlib.sha256(payload.encode()).hexdigest()[:16] == digest


def items_of(body: dict) -> list:
    raw = body.get("input")
    return [{"type": "message", "role": "user", "content": raw}] if isinstance(raw, str) \
        else raw if isinstance(raw, list) else []


def conversation_of(body: dict) -> str | None:
    """The id of the conversation a request continues (`conversation`: its id, or {id})."""
    conv = body.get("conversation")
    conv = conv.get("id") if isinstance(conv, dict) else conv
    return conv if isinstance(conv, str) else None


def resolved(body: dict, stored: dict[str, dict]) -> tuple[dict, list[str]]:
    """The request with each `item_reference` replaced by the item it names (one the stand-in
    gave in a stored response: `store` not false), and the references it cannot resolve."""
    raw = body.get("input")
    if not isinstance(raw, list) or not any(
            isinstance(i, dict) and i.get("type") == "item_reference" for i in raw):
        return body, []
    out, missing = [], []
    for k, item in enumerate(raw):
        if isinstance(item, dict) and item.get("type") == "item_reference":
            found = stored.get(item.get("id"))  # type: ignore[arg-type]
            if found is None:
                missing.append(f"input[{k}]: Item with id '{item.get('id')}' not found. Items "
                               "are not persisted when `store` is set to false.")
                continue
            item = found
        out.append(item)
    return {**body, "input": out}, missing


def problems(body: Any, history: list | None) -> list[str]:
    """Every reason the Responses API would refuse `body`; `history` is what
    `previous_response_id` or `conversation` names (None: nothing the stand-in gave)."""
    if not isinstance(body, dict):
        return ["body: expected a JSON object"]
    out: list[str] = []
    if not isinstance(body.get("model"), str) or not body["model"]:
        out.append("model: Missing required parameter: 'model'.")
    if "instructions" in body and body["instructions"] is not None and \
            not isinstance(body["instructions"], str):
        out.append("instructions: Invalid type: expected a string.")
    if body.get("previous_response_id") is not None and conversation_of(body) is not None:
        out.append("previous_response_id: Cannot be used in conjunction with conversation.")
    elif body.get("previous_response_id") is not None and history is None:
        out.append(f"Previous response with id '{body['previous_response_id']}' not found.")
    elif conversation_of(body) is not None and history is None:
        out.append(f"Conversation with id '{conversation_of(body)}' not found.")
    raw = body.get("input")
    if "input" not in body:  # optional: a stored prompt, or an earlier response, is the input
        return out
    if not isinstance(raw, (str, list)):
        return [*out, "input: Invalid type: expected a string or an array of items."]
    called: set[str] = {i["call_id"] for i in history or () if i.get("type") in CALL_OUTPUTS}
    answered: set[str] = set()
    items = items_of(body)
    for k, item in enumerate(items):
        out += _item_problems(item, f"input[{k}]", called, answered)
        if isinstance(item, dict) and item.get("type") == "reasoning":
            nxt = items[k + 1] if k + 1 < len(items) else None
            if not isinstance(nxt, dict) or nxt.get("type") == "reasoning":
                out.append(f"Item '{item.get('id')}' of type 'reasoning' was provided without "
                           "its required following item.")
    current = {i.get("call_id") for i in items
               if isinstance(i, dict) and i.get("type") in CALL_OUTPUTS}
    for cid in sorted(str(c) for c in current - answered):
        out.append(f"No tool output found for function call {cid}.")
    tools = body.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(
            isinstance(t, dict) and isinstance(t.get("type"), str) for t in tools)):
        out.append("tools: Invalid type: expected an array of tool objects.")
    mot = body.get("max_output_tokens")
    if mot is not None and (not isinstance(mot, int) or isinstance(mot, bool) or mot < 16):
        out.append("max_output_tokens: Invalid value: expected an integer >= 16.")
    return out


def _item_problems(item: Any, where: str, called: set, answered: set) -> list[str]:
    if not isinstance(item, dict):
        return [f"{where}: Invalid type: expected an object."]
    kind = item.get("type", "message" if "role" in item else None)
    if kind not in ITEM_TYPES:
        return [f"{where}.type: Invalid value: {kind!r}. Supported values are: "
                f"{', '.join(ITEM_TYPES)}."]
    if kind == "message":
        return _message_problems(item, where)
    if kind == "reasoning":
        if not isinstance(item.get("id"), str) or not isinstance(item.get("summary"), list):
            return [f"{where}: a reasoning item needs its 'id' and 'summary'."]
        if "encrypted_content" in item and not intact(item["encrypted_content"]):
            return [f"{where}.encrypted_content: The encrypted content for item "
                    f"{item['id']} could not be verified."]
        return []
    if kind == "function_call":
        if not all(isinstance(item.get(k), str) for k in ("call_id", "name", "arguments")):
            return [f"{where}: a function_call needs 'call_id', 'name' and 'arguments'."]
    if kind in CALL_OUTPUTS:
        if not isinstance(item.get("call_id"), str):
            return [f"{where}.call_id: Missing required parameter."]
        called.add(item["call_id"])
        return []
    if kind in CALL_OUTPUTS.values():
        cid = item.get("call_id", item.get("id") if kind == "local_shell_call_output" else None)
        if cid not in called:
            return [f"{where}: No tool call found for {kind.removesuffix('_output')} output "
                    f"with call_id {cid}."]
        answered.add(cid)
        out = item.get("output")
        if kind in ("function_call_output", "custom_tool_call_output"):
            return [] if isinstance(out, (str, list)) else [f"{where}.output: Invalid type."]
        return []
    if kind == "compaction" and not isinstance(item.get("encrypted_content"), str):
        return [f"{where}.encrypted_content: Missing required parameter."]
    return []  # item_reference, web_search_call, mcp_call, ...


def _message_problems(item: dict, where: str) -> list[str]:
    role = item.get("role")
    if role not in ROLES:
        return [f"{where}.role: Invalid value: {role!r}. Supported values are: "
                f"{', '.join(ROLES)}."]
    content = item.get("content")
    if isinstance(content, str):
        return []
    if not isinstance(content, list):
        return [f"{where}.content: Invalid type: expected a string or an array."]
    allowed = OUTPUT_PARTS if role == "assistant" else INPUT_PARTS
    out = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in allowed:
            out.append(f"{where}.content[{j}].type: Invalid value: {kind!r}. Supported values "
                       f"are: {', '.join(allowed)}.")
        elif kind in ("input_text", "output_text") and not isinstance(part.get("text"), str):
            out.append(f"{where}.content[{j}].text: Missing required parameter.")
    return out


def sealed(item: Any) -> str | None:
    """The reasoning a reasoning item of the stand-in's seals (None: not one, or changed)."""
    if not isinstance(item, dict) or not intact(item.get("encrypted_content")):
        return None
    return base64.b64decode(item["encrypted_content"]).decode().rsplit("|", 1)[0]


def _all_turns(body: dict) -> bool:
    context = (body.get("reasoning") or {}).get("context")
    if context in ("all_turns", "current_turn"):
        return context == "all_turns"
    model = str(body.get("model", "")).lower()
    gpt = re.search(r"gpt-(\d+)(?:\.(\d+))?", model)
    if gpt:
        return (int(gpt.group(1)), int(gpt.group(2) or 0)) >= (5, 6)
    return re.search(r"(^|[/-])(o[1-4]|codex-mini)($|-)", model) is None


def _reasoning_read(body: dict, items: list, counter: Any) -> int:
    """The tokens of the reasoning the provider renders again (see the module's note)."""
    start = -1 if _all_turns(body) else max(
        (k for k, i in enumerate(items) if isinstance(i, dict) and i.get("role") == "user"
         and i.get("type") in (None, "message")), default=-1)
    return sum(counter.count(sealed(i) or "") for k, i in enumerate(items)
               if k > start and isinstance(i, dict) and i.get("type") == "reasoning")


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    if not isinstance(value, dict):
        return []
    out: list[str] = []
    for key in ("content", "text", "output", "arguments", "name", "summary"):
        out += _texts(value.get(key))
    return out  # images: standin_images.py


def _shown(tools: list) -> list:
    """The tools the prompt holds: not those deferred to a tool search."""
    return [t for t in tools if not (isinstance(t, dict) and t.get("defer_loading") is True)]


def functions(body: dict, items: list) -> list[tuple[str | None, str]]:
    """The function tools a request offers the model, (namespace, name): those of `tools` and
    of every `additional_tools` item (Codex's default model sends its tools only there), a
    function inside a `namespace` tool named with it."""
    offered = [t for t in body.get("tools") or () if isinstance(t, dict)]
    offered += [t for i in items if isinstance(i, dict) and i.get("type") == "additional_tools"
                and isinstance(i.get("tools"), list) for t in i["tools"] if isinstance(t, dict)]
    out: list[tuple[str | None, str]] = []
    for t in offered:
        inner = t.get("tools") if t.get("type") == "namespace" else [t]
        space = t.get("name") if t.get("type") == "namespace" else None
        out += [(space, f["name"]) for f in inner or () if isinstance(f, dict)
                and f.get("type") == "function" and isinstance(f.get("name"), str)]
    return out


def prompt_tokens(body: dict, history: list) -> int:
    counter = counter_for(body.get("model") if isinstance(body.get("model"), str) else None)
    items = [*history, *items_of(body)]
    texts = _texts(body.get("instructions") or "") + [
        t for i in items if not (isinstance(i, dict) and i.get("type") == "reasoning")
        for t in _texts(i)]
    if body.get("tools"):  # not those deferred to a tool search: a search's output loads them
        texts.append(json.dumps(_shown(body["tools"])))
    texts += [json.dumps(i["tools"]) for i in items if isinstance(i, dict)
              and i.get("type") == "tool_search_output" and i.get("tools")]
    # an `additional_tools` item's tools are in the prompt from there on, as `tools` are
    texts += [json.dumps(_shown(i["tools"])) for i in items if isinstance(i, dict)
              and i.get("type") == "additional_tools" and isinstance(i.get("tools"), list)]
    return sum(counter.count(t) for t in texts) + _reasoning_read(body, items, counter) + \
        media_tokens(items) + 4 * len(items) + 3


# ---- answers -----------------------------------------------------------------------------

def output_items(rid: str, reply: Reply, reasoning: bool, words: int = 6) -> list[dict]:
    """What the model answers: a reasoning item of `words` words sealed (when asked for its
    encrypted content), then a function call or a message."""
    out: list[dict] = []
    if reasoning:
        thought = " ".join([f"thought of {rid}:"] + [f"step{k} weighs what came back" for k in
                                                      range(max(0, (words - 3) // 4))])
        out.append({"id": f"rs_{rid}", "type": "reasoning", "summary": [],
                    "encrypted_content": encrypted(thought)})
    if reply.tool_name:
        out.append({"id": f"fc_{rid}", "type": "function_call", "status": "completed",
                    "call_id": f"call_{rid}", "name": reply.tool_name,
                    "arguments": json.dumps(reply.tool_arguments)})
        if reply.namespace is not None:
            out[-1]["namespace"] = reply.namespace
    else:
        out.append({"id": f"msg_{rid}", "type": "message", "role": "assistant",
                    "status": "completed", "content": [
                        {"type": "output_text", "text": reply.text, "annotations": []}]})
    return out


def compaction_item(rid: str, items: list) -> dict:
    """The answer to a request that ends with `compaction_trigger` (Codex's remote
    compaction): a `compaction` item, the history sealed (here: how many items it held)."""
    return {"id": f"cmp_{rid}", "type": "compaction",
            "encrypted_content": encrypted(f"the {len(items) - 1} items before, compacted")}


def _usage(u: Usage) -> dict:
    return {"input_tokens": u.prompt, "input_tokens_details": {"cached_tokens": u.cache_read},
            "output_tokens": u.completion, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": u.prompt + u.completion}


def response(rid: str, body: dict, created: int, output: list[dict], usage: Usage | None,
             status: str = "completed") -> dict:
    return {"id": f"resp_{rid}", "object": "response", "created_at": created, "status": status,
            "error": None, "incomplete_details": None,
            "instructions": body.get("instructions"), "max_output_tokens":
                body.get("max_output_tokens"), "model": body["model"], "output": output,
            "parallel_tool_calls": True, "previous_response_id":
                body.get("previous_response_id"), "reasoning": {
                "effort": None, "summary": None,  # the mode used, as the provider says it
                "context": "all_turns" if _all_turns(body) else "current_turn"},
            "store": body.get("store", True), "temperature": 1.0,
            "text": {"format": {"type": "text"}}, "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [], "top_p": 1.0, "truncation": "disabled",
            "usage": _usage(usage) if usage else None, "user": None, "metadata": {}}


def failed_events(rid: str, body: dict, created: int, error: dict) -> list[bytes]:
    """The SSE events of a streamed response that fails before any output: created, in
    progress, then `response.failed` with ``error`` (its code and message)."""
    start = response(rid, body, created, [], None, "in_progress")
    failed = {**response(rid, body, created, [], None, "failed"), "error": error}
    return _sse([("response.created", {"response": start}),
                 ("response.in_progress", {"response": start}),
                 ("response.failed", {"response": failed})])


#: the events every stream opens with, before any of its output: created, in_progress
OPENING = 2


def events(rid: str, body: dict, created: int, output: list[dict], usage: Usage) -> list[bytes]:
    """The SSE events of a streamed response, as the provider sends them."""
    seq: list[tuple[str, dict]] = []
    start = response(rid, body, created, [], None, "in_progress")
    seq += [("response.created", {"response": start}),
            ("response.in_progress", {"response": start})]
    for n, item in enumerate(output):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            seq.append(("response.output_item.added", {"output_index": n, "item": {
                **item, "status": "in_progress", "content": []}}))
            part = {"type": "output_text", "text": "", "annotations": []}
            base = {"item_id": item["id"], "output_index": n, "content_index": 0}
            seq.append(("response.content_part.added", {**base, "part": part}))
            seq += [("response.output_text.delta", {**base, "delta": p, "logprobs": []})
                    for p in _pieces(text)]
            seq.append(("response.output_text.done", {**base, "text": text, "logprobs": []}))
            seq.append(("response.content_part.done", {**base, "part": {**part, "text": text}}))
        elif item["type"] == "function_call":
            seq.append(("response.output_item.added", {"output_index": n, "item": {
                **item, "status": "in_progress", "arguments": ""}}))
            base = {"item_id": item["id"], "output_index": n}
            seq += [("response.function_call_arguments.delta", {**base, "delta": p})
                    for p in _pieces(item["arguments"])]
            seq.append(("response.function_call_arguments.done",
                        {**base, "arguments": item["arguments"], "name": item["name"]}))
        else:
            seq.append(("response.output_item.added", {"output_index": n, "item": {
                **item, "encrypted_content": None}}))
        seq.append(("response.output_item.done", {"output_index": n, "item": item}))
    seq.append(("response.completed", {"response": response(rid, body, created, output,
                                                             usage)}))
    return _sse(seq)


def _sse(seq: list[tuple[str, dict]]) -> list[bytes]:
    return [f"event: {name}\ndata: "
            f"{json.dumps({'type': name, 'sequence_number': k, **data})}\n\n".encode()
            for k, (name, data) in enumerate(seq)]
