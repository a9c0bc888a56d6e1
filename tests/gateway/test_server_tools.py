"""Anthropic's server tools in a chat's history (web search and fetch, code execution, bash and
the text editor in the code sandbox, tool search): an assistant turn holds the `server_tool_use`
and the provider's own result block, which carries encrypted content or the sandbox's output.
Fitted into a small window, such a turn goes upstream whole, each block byte for byte, or is
left out with an audit entry; never a call without its result."""

from __future__ import annotations

import json

from providers.sdk import anthropic_sdk_accepts

CALLS = {  # the server tool's name -> its result block, as the Messages API returns them
    "web_search": lambda k, id: {"type": "web_search_tool_result", "tool_use_id": id,
                                 "content": [{"type": "web_search_result", "title": f"page {k}",
                                              "url": f"https://example.com/{k}",
                                              "encrypted_content": f"EqgfCioIARgB{k}" * 30,
                                              "page_age": "2 days ago"}]},
    "web_fetch": lambda k, id: {"type": "web_fetch_tool_result", "tool_use_id": id, "content": {
        "type": "web_fetch_result", "url": f"https://example.com/{k}",
        "retrieved_at": "2026-12-01T10:00:00Z",
        "content": {"type": "document", "title": f"page {k}",
                    "source": {"type": "text", "media_type": "text/plain",
                               "data": f"fetched page {k}: " + "lorem ipsum " * 60}}}},
    "code_execution": lambda k, id: {"type": "code_execution_tool_result", "tool_use_id": id,
                                     "content": {"type": "code_execution_result",
                                                 "stdout": f"run {k}\n" * 40, "stderr": "",
                                                 "return_code": 0, "content": []}},
    "bash_code_execution": lambda k, id: {
        "type": "bash_code_execution_tool_result", "tool_use_id": id,
        "content": {"type": "bash_code_execution_result", "stdout": f"line {k}\n" * 40,
                    "stderr": "", "return_code": 0, "content": []}},
    "text_editor_code_execution": lambda k, id: {
        "type": "text_editor_code_execution_tool_result", "tool_use_id": id,
        "content": {"type": "text_editor_code_execution_view_result", "file_type": "text",
                    "content": f"def f{k}():\n    return {k}\n" * 20, "num_lines": 40,
                    "start_line": 1, "total_lines": 40}},
    "tool_search_tool_regex": lambda k, id: {
        "type": "tool_search_tool_result", "tool_use_id": id,
        "content": {"type": "tool_search_tool_search_result",
                    "tool_references": [{"type": "tool_reference", "tool_name": f"tool_{k}"}]}},
}


def _turn(k: int, name: str) -> dict:
    id = f"srvtoolu_{k:02d}{name[:6]}"
    return {"role": "assistant", "content": [
        {"type": "text", "text": f"Looking it up ({k})."},
        {"type": "server_tool_use", "id": id, "name": name, "input": {"query": f"q {k}"}},
        CALLS[name](k, id),
        {"type": "text", "text": f"Found what step {k} needed."}]}


def test_server_tool_turns_go_upstream_whole_or_not_at_all(small):
    client = small.anthropic()
    names = list(CALLS)
    history: list[dict] = []
    # rounds enough for the summaries to take a turn of every kind: the window steps when
    # the chat passes it, not each request (its answers no longer outlined to nothing, for
    # 15 tokens a turn, at every request from the first step on)
    rounds = 24
    for k in range(rounds):
        history.append({"role": "user", "content": f"Step {k}: look up the next thing."})
        anthropic_sdk_accepts({"messages": history})
        raw = client.messages.with_raw_response.create(model="standin-small", max_tokens=200,
                                                       messages=history)
        assert raw.parse().content[0].text
        history.append(_turn(k, names[k % len(names)]))
    sent = [r for r in small.model_requests() if r["path"] == "/v1/messages"][-rounds:]
    assert all(r["status"] == 200 and r["problems"] == [] for r in sent), \
        [r["problems"] for r in sent if r["problems"]]
    originals = {json.dumps(b, sort_keys=True) for m in history if m["role"] == "assistant"
                 for b in m["content"]}
    server_blocks = 0
    for request in sent:
        for message in request["body"]["messages"]:
            if message["role"] != "assistant" or isinstance(message["content"], str):
                continue
            blocks = message["content"]
            uses = [b["id"] for b in blocks if b["type"] == "server_tool_use"]
            results = [b["tool_use_id"] for b in blocks if b["type"].endswith("_tool_result")]
            assert uses == results, blocks  # each call with its result, in the same turn
            for b in blocks:
                if b["type"] != "text":
                    server_blocks += 1
                    assert json.dumps(b, sort_keys=True) in originals, b  # byte for byte
    last = sent[-1]["body"]["messages"]
    assert last[-1]["content"][0]["text"] == f"Step {rounds - 1}: look up the next thing."
    assert server_blocks > 0  # some went upstream
    assert len(last) < len(history) - 1  # the window is small: the oldest turns are not
    cid = raw.headers["x-ctxlayer-conversation"]
    said = " ".join(e.summary for e in small.standin.call(_why(small, cid))
                    if e.action in ("dropped", "summarized"))
    kinds = {CALLS[name](0, "x")["type"] for name in names}
    assert {k for k in kinds if "server_tool_use (" in said and f"{k} (" in said} == kinds


async def _why(stack, cid: str) -> list:
    return stack.state.conversations.why(stack.gateway.caller.workspace, cid)
