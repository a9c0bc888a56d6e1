"""A Responses client that keeps its answers stored (`store`, the default) may send an earlier
call back as an `item_reference` to it, and the call's output after it: the provider puts the
stored call in its place. The gateway pairs the output with the reference (it cannot see the
call), so fitting the chat keeps or drops the two together. Before, the output was dropped as
an orphan once the chat was fitted, and the provider refused the call left without it."""

from __future__ import annotations

from gateway_stack import fresh_stack, prose

MODEL, WINDOW = "gpt-5.4", 8000
TOOLS = [{"type": "function", "name": "read", "description": "Read a file.",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]


def test_an_output_answering_a_referenced_call_is_kept_with_the_reference(tmp_path):
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW}) as stack:
        client = stack.openai()
        items: list[dict] = []
        for k in range(12):
            items.append({"role": "user", "content": prose(f"question {k}", 200)})
            stack.standin.reply(tool_name="read", tool_arguments={"path": f"src/m{k}.py"})
            answer = client.responses.create(model=MODEL, input=items, tools=TOOLS,
                                             max_output_tokens=500)
            (call,) = [o for o in answer.output if o.type == "function_call"]
            items += [{"type": "item_reference", "id": call.id},
                      {"type": "function_call_output", "call_id": call.call_id,
                       "output": prose(f"contents of m{k}", 250)}]
            stack.standin.reply(text=f"read src/m{k}.py")
            answer = client.responses.create(model=MODEL, input=items, tools=TOOLS,
                                             max_output_tokens=500)
            items += [o.model_dump(exclude_none=True) for o in answer.output]
        sent = stack.model_requests()
    assert len(sent) == 24 and all(r["status"] == 200 for r in sent), \
        [r["problems"] for r in sent if r["problems"]]
    assert any("[Summary of" in str(r["body"]["input"]) for r in sent), \
        "the chat outgrew the window and was fitted"
    last = sent[-1]["body"]["input"]  # the chat but its last answer
    # the newest reference and its output went together, as the client sent them
    assert last[-2:] == items[-3:-1] and last[-2]["type"] == "item_reference"
    # and every output sent went with its reference
    for r in sent:
        body = r["body"]["input"]
        for n, item in enumerate(body):
            if item.get("type") == "function_call_output":
                assert body[n - 1]["type"] == "item_reference", body[n - 1]
