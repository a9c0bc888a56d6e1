"""Tool search (`defer_loading`, in both APIs): a deferred tool's definition is not in the
prompt until a search loads it, by a `tool_reference` block (Anthropic) or a
`tool_search_output` item (Responses). The gateway costs the tools as the provider does, so a
chat with many deferred tools keeps its budget for its history, and a loaded tool costs its
definition where it was loaded."""

from __future__ import annotations

import json

from gateway_stack import fresh_stack, prose

MODEL = "claude-opus-5-5"
WINDOW = 16_000


def inventory(n: int) -> list[dict]:
    """`n` deferred tools, about 150 tokens of definition each, and the search that finds them."""
    tools = [{"name": f"lookup_{k}", "defer_loading": True,
              "description": f"Look up record {k} of the inventory. " + prose(f"tool {k}", 90),
              "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}}}
             for k in range(n)]
    search = {"name": "find_tools", "description": "Find the tools for a task.",
              "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}}
    return [search, *tools]


def test_deferred_tools_cost_nothing_until_a_reference_loads_them(tmp_path):
    tools = inventory(150)  # about 22k tokens of definitions: past the 16k window
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW}) as stack:
        messages = stack.anthropic().messages
        history: list[dict] = []
        tokens = []
        for k in range(12):
            history.append({"role": "user", "content": prose(f"question {k}", 300)})
            if k % 4 == 3:  # the search ran: its result loads three tools
                history += [
                    {"role": "assistant", "content": [{"type": "tool_use", "id": f"s{k}",
                                                       "name": "find_tools",
                                                       "input": {"query": f"record {k}"}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"s{k}",
                                                  "content": [
                                                      {"type": "tool_reference",
                                                       "tool_name": f"lookup_{k + j}"}
                                                      for j in range(3)]}]}]
            raw = messages.with_raw_response.create(model=MODEL, max_tokens=1000,
                                                    messages=history, tools=tools)
            tokens.append(int(raw.headers["x-ctxlayer-tokens"]))
            history.append({"role": "assistant",
                            "content": [b.model_dump() for b in raw.parse().content]})
        sent = stack.model_requests()
    assert [r["status"] for r in sent] == [200] * 12, [r["problems"] for r in sent]
    loaded = [json.dumps(t) for t in tools[1:] if any(
        f'"{t["name"]}"' in json.dumps(r["body"]["messages"]) for r in sent[-1:])]
    assert len(loaded) == 9  # three searches, three tools each
    # the gateway's count follows the provider's, the loaded definitions included (above it
    # by Anthropic's tool-use prompt, which the stand-in does not count, and framing)
    for ours, r in zip(tokens, sent, strict=True):
        assert r["prompt_tokens"] <= ours <= r["prompt_tokens"] + 500, (ours, r["prompt_tokens"])
    assert max(r["prompt_tokens"] for r in sent) > WINDOW // 2


def test_responses_deferred_tools_and_the_tools_a_search_loaded(tmp_path):
    """The Responses API's tool search: deferred function tools cost nothing, and a
    `tool_search_output` costs the definitions it loads (before, it was read as a call's output
    with no text: nothing)."""
    model = "gpt-5.4"
    tools = [{"type": "function", "name": t["name"], "description": t["description"],
              "parameters": t["input_schema"], "defer_loading": True}
             for t in inventory(150)[1:]]
    with fresh_stack(tmp_path, {model: WINDOW}, windows={model: WINDOW}) as stack:
        client = stack.openai()
        items: list[dict] = []
        tokens = []
        for k in range(12):
            items.append({"role": "user", "content": prose(f"question {k}", 300)})
            if k % 4 == 3:  # the client ran a search: three tools loaded
                items += [{"type": "tool_search_call", "call_id": f"s{k}", "execution": "client",
                           "arguments": {"query": f"record {k}"}, "status": "completed"},
                          {"type": "tool_search_output", "call_id": f"s{k}", "execution": "client",
                           "status": "completed", "tools": tools[k:k + 3]}]
            raw = client.responses.with_raw_response.create(
                model=model, input=items, tools=[*tools, {"type": "tool_search",
                                                          "execution": "client"}],
                max_output_tokens=1000, store=False)
            tokens.append(int(raw.headers["x-ctxlayer-tokens"]))
            items += [o.model_dump(exclude_none=True) for o in raw.parse().output]
        sent = stack.model_requests()
    assert [r["status"] for r in sent] == [200] * 12, [r["problems"] for r in sent]
    # the gateway's count follows the provider's, the loaded definitions included (the JSON
    # of the tools is spaced a little differently on each side)
    for ours, r in zip(tokens, sent, strict=True):
        assert abs(ours - r["prompt_tokens"]) <= 0.02 * r["prompt_tokens"], (ours, r)
    assert max(r["prompt_tokens"] for r in sent) > WINDOW // 2


def test_a_search_the_provider_ran_comes_back_with_a_null_call_id(stack):
    """A tool search the provider ran has no `call_id`: the SDK's types say None, and a client
    that dumps the output items it got sends them with `"call_id": null`. Forwarded as items
    the gateway does not know, as without the key (before: 400, `input[1].call_id: expected
    the call's id, got NoneType`)."""
    from openai.types.responses import ResponseToolSearchCall, ResponseToolSearchOutputItem

    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"},
            "defer_loading": True}
    search = ResponseToolSearchCall(id="ts_1", arguments={"query": "weather"},
                                    execution="server", status="completed",
                                    type="tool_search_call")
    loaded = ResponseToolSearchOutputItem.model_validate(
        {"id": "tso_1", "execution": "server", "status": "completed", "tools": [tool],
         "type": "tool_search_output"})
    items = [{"role": "user", "content": "find the weather tool"},
             search.model_dump(), loaded.model_dump(),
             {"role": "user", "content": "now use it"}]
    assert items[1]["call_id"] is None and items[2]["call_id"] is None
    raw = stack.openai().responses.with_raw_response.create(
        model="gpt-5.4", input=items, tools=[tool, {"type": "tool_search"}])
    assert raw.parse().status == "completed"
    seen = stack.model_requests()[-1]
    assert seen["status"] == 200 and seen["problems"] == []
    assert seen["body"]["input"] == items
    # the tools it loaded are counted (their definition's words)
    assert int(raw.headers["x-ctxlayer-tokens"]) >= 20
