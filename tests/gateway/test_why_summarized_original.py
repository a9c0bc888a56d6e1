"""`ctx/why` (`ctxlayer chats --why`) on a chat whose tool outputs one step outlined, then
summarized: each summarized output is listed at its own size and lines, as an outlined one
is (what ctx/restore gives back), not at its outline's. OpenCode's 735-line log of 19.5k
tokens was listed as `summarized 830 -> 0 ... (37 lines)`. Real gateway, the official OpenAI
SDK, the strict stand-in with a 4096-token window."""

from __future__ import annotations

import json

LOG = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks" for i in range(200))
TOOLS = [{"type": "function", "function": {"name": "sh", "parameters": {
    "type": "object", "properties": {"cmd": {"type": "string"}}}}}]


def _chat(calls: int) -> list[dict]:
    messages: list[dict] = [{"role": "system", "content": "You are a helper."},
                            {"role": "user", "content": "Check the build log, many times."}]
    for k in range(calls):
        messages += [{"role": "assistant", "content": None, "tool_calls": [{
                          "id": f"c{k}", "type": "function", "function": {
                              "name": "sh", "arguments": json.dumps({"cmd": "cat build.log"})}}]},
                     {"role": "tool", "tool_call_id": f"c{k}", "content": LOG}]
    return [*messages, {"role": "user", "content": "Which step has most checks?"}]


def why(stack, conversation_id: str) -> list:
    async def read() -> list:
        return stack.state.conversations.why(stack.gateway.caller.workspace, conversation_id)
    return stack.standin.call(read())


def test_why_lists_an_output_outlined_then_summarized_at_its_own_size(small):
    small.openai().chat.completions.create(
        model="standin-small", messages=_chat(30), tools=TOOLS, max_tokens=256,
        extra_headers={"x-ctxlayer-conversation": "logs"})
    entries = why(small, "logs")
    summarized = [e for e in entries if e.action == "summarized" and "result of" in e.summary]
    outlined = [e for e in entries if e.action == "compressed"]
    assert summarized and outlined  # the step outlined the outputs, then summarized the oldest
    # every output is the same log: each entry names its size, outlined or summarized (the
    # summarized ones were listed at the outline's, 146 tokens and 16 lines)
    assert {e.tokens_before for e in summarized} == {e.tokens_before for e in outlined}
    assert all("(200 lines)" in e.summary for e in summarized + outlined)
