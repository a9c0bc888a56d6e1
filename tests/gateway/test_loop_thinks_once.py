"""A long tool loop of a Claude model that thinks once a turn (extended thinking without the
interleaved beta: only the loop's first step opens with a thinking block), through the gateway
at a small window, turn by turn as a live agent sends it. Anthropic reads the whole loop as one
assistant turn whose first assistant message must open with thinking. Once the loop passed the
window, the gateway summarized its first step with the steps after it and sent the loop opened
by a later step's bare tool_use, which the provider refuses; keeping that step, the summary of
the steps between, a user text after its result, opened a new turn the next step opened
without thinking. The stand-in refuses both, as Anthropic does: every request must pass."""

from __future__ import annotations

import json

from gateway_stack import fresh_stack, prose
from providers import standin_thinking as thinking

MODEL = "claude-sonnet-4-5"
WINDOW = 3000
THINKING = {"type": "enabled", "budget_tokens": 1024}
TOOLS = [{"name": "read", "description": "Read a file.",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]


def test_every_request_of_a_long_loop_opens_it_with_its_thinking(tmp_path):
    rounds = 24
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW},
                     thinks_once=(MODEL,)) as stack:
        stack.standin.agent(rounds, [{"name": "read", "arguments": {"path": "a.py"}}])
        client = stack.anthropic()
        history: list[dict] = []
        for r in range(3):  # earlier exchanges, then the task the loop works on
            history += [{"role": "user", "content": prose(f"earlier task {r}", 40)},
                        {"role": "assistant", "content": [{"type": "text", "text": f"ok {r}"}]}]
        history.append({"role": "user", "content": "Fix the crash in the parser: KeyError 'x'."})
        for k in range(rounds + 1):
            answer = client.messages.create(model=MODEL, max_tokens=500, messages=history,
                                            tools=TOOLS, thinking=THINKING)
            blocks = [b.model_dump(exclude_none=True) for b in answer.content]
            history.append({"role": "assistant", "content": blocks})
            if answer.stop_reason != "tool_use":
                break
            history.append({"role": "user", "content": [{
                "type": "tool_result", "tool_use_id": blocks[-1]["id"],
                "content": prose(f"a.py, read {k}", 300)}]})
        sent = stack.model_requests()
    steps = [m for m in history[7:] if m["role"] == "assistant"]
    assert steps[0]["content"][0]["type"] == "thinking", "the loop's first step thinks"
    assert all(b["type"] != "thinking" for m in steps[1:] for b in m["content"]), "only it"
    assert [r["status"] for r in sent] == [200] * (rounds + 1), \
        [(n, r["problems"]) for n, r in enumerate(sent) if r["problems"]]
    # the loop passed the window: the steps between its first and its newest were summarized,
    # the summary read inside the first step's result (no user text opens a turn in the loop)
    inside = [r for r in sent if any(
        b["type"] == "tool_result" and "[Summary of" in json.dumps(b["content"])
        for m in r["body"]["messages"] if isinstance(m["content"], list) for b in m["content"])]
    assert inside, "the loop passed the window and was summarized"
    for r in sent:
        body = r["body"]
        assert thinking.problems(body, set()) == []
        assert r["prompt_tokens"] <= WINDOW
        opening = [m for m in body["messages"][thinking.last_turn_start(body["messages"]):]
                   if m["role"] == "assistant"]
        # the thinking block byte for byte as the provider sent it
        assert not opening or opening[0]["content"][0] == steps[0]["content"][0]
