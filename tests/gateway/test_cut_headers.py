"""`x-ctxlayer-dropped` says the messages a request leaves out, `x-ctxlayer-shortened` those it
sends shortened (README): all of them, also on the turns after the one that cut them. They said
only what the turn cut anew: a chat that compacted at its ninth turn left out the same 8
messages at its tenth and eleventh, its headers said 0 and `ctxlayer chats` said 8."""

from __future__ import annotations

import json

from gateway_stack import fresh_stack, prose

TOOLS = [{"type": "function", "function": {"name": "run", "description": "run a command",
                                           "parameters": {"type": "object", "properties": {
                                               "cmd": {"type": "string"}}}}}]


def _listed_dropped(stack, conversation_id: str) -> int:
    """What `ctx/conversations` (`ctxlayer chats`) says the chat's last request left out."""
    (info,) = [c for c in stack.state.conversations.list(stack.gateway.caller.workspace)
               if c.conversation_id == conversation_id]
    return info.dropped


def test_the_dropped_header_counts_what_a_compacted_chat_still_leaves_out(tmp_path):
    with fresh_stack(tmp_path, {"gpt-4o": 6000}) as stack:
        client = stack.openai()
        msgs: list[dict] = [{"role": "system", "content": "You are terse."}]
        said = []
        for k in range(12):
            msgs.append({"role": "user", "content": prose(f"q{k}", 200)})
            raw = client.chat.completions.with_raw_response.create(
                model="gpt-4o", max_tokens=500, messages=msgs)
            answer = raw.parse().choices[0].message.content
            sent = stack.model_requests()[-1]["body"]["messages"]
            # left out: the client's messages that do not go upstream whole
            out = sum(1 for m in msgs if m not in sent)
            header = int(raw.headers["x-ctxlayer-dropped"])
            assert header == out, (k, header, out)
            cid = raw.headers["x-ctxlayer-conversation"]
            assert _listed_dropped(stack, cid) == out
            said.append((out, raw.headers["x-ctxlayer-compacted"]))
            msgs.append({"role": "assistant", "content": f"{answer} {prose(f'a{k}', 100)}"})
    # the chat compacted, and turns after the one that did still leave messages out
    later = [out for out, compacted in said if compacted == "true"]
    assert len(later) >= 2 and all(out > 0 for out in later)


def _log(k: int) -> str:
    return "\n".join([*(f"line {j} of run {k}: step ok value={j * k} path src/mod_{k}.py"
                        for j in range(60)), f"ERROR in run {k}: Traceback boom"])


def test_the_shortened_header_counts_every_tool_output_sent_shortened(tmp_path):
    with fresh_stack(tmp_path, {"gpt-4o": 9000}) as stack:
        client = stack.openai()
        msgs: list[dict] = [{"role": "system", "content": "agent"},
                            {"role": "user", "content": "run things"}]
        counts = []
        for k in range(12):
            raw = client.chat.completions.with_raw_response.create(
                model="gpt-4o", max_tokens=1000, tools=TOOLS, messages=msgs,
                extra_headers={"x-ctxlayer-conversation": "sh"})
            assert raw.parse().choices
            sent = stack.model_requests()[-1]["body"]["messages"]
            mine = {m["tool_call_id"]: m["content"] for m in msgs if m["role"] == "tool"}
            shortened = sum(1 for m in sent if m["role"] == "tool"
                            and len(m["content"]) < len(mine[m["tool_call_id"]]))
            assert int(raw.headers["x-ctxlayer-shortened"]) == shortened, k
            counts.append(shortened)
            msgs.append({"role": "assistant", "content": None, "tool_calls": [{
                "id": f"c{k}", "type": "function",
                "function": {"name": "run", "arguments": json.dumps({"cmd": f"make {k}"})}}]})
            msgs.append({"role": "tool", "tool_call_id": f"c{k}", "content": _log(k)})
    # outlines stay from one turn to the next: a turn with none new still sends them
    assert max(counts) >= 4 and counts[-1] >= counts[-2] > 0
