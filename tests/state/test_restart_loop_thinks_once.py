"""A tool loop whose thinking opens its first step alone (Claude without interleaved thinking),
summarized under a small budget: the summary of the steps between is read inside the first
step's tool result (prepare/held.py), so the window kept in the state folder holds a message
made of two. Taken up across a restart, the next request is the one the daemon that never
stopped sends. The real State and tokenizer, Anthropic-format requests as a client sends them."""

from __future__ import annotations

import pytest

from ctxlayer import protocol
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import chats

MODEL = "claude-sonnet-4-5"


def requests_of_the_loop(steps: int) -> list[list[dict]]:
    msgs: list[dict] = [{"role": "user", "content": "Find where the retry budget is computed."}]
    out = []
    for k in range(steps):
        opening = [{"type": "thinking", "thinking": "Read the modules in turn.",
                    "signature": "S" * 400}] if k == 0 else []
        msgs += [{"role": "assistant", "content": [*opening, {
                     "type": "tool_use", "id": f"toolu_{k}", "name": "read",
                     "input": {"path": f"src/mod_{k}.py"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}",
                                               "content": "\n".join(
                     f"def step_{k}_{j}(budget):  # retry budget {j}" for j in range(60))}]}]
        out.append(list(msgs))
    return out


async def _turn(state: State, request: list[dict]):
    caller = Caller(state, source="prepare", options=protocol.InitializationOptions(model=MODEL))
    return await chats.prepare(caller, protocol.PrepareParams(
        format="anthropic", request={"model": MODEL, "max_tokens": 1000,
                                     "thinking": {"type": "enabled", "budget_tokens": 1024},
                                     "messages": request}, budget=3000))


@pytest.mark.parametrize("restart_before", [12, 15, 18])
async def test_a_restart_inside_a_loop_whose_summary_sits_in_a_tool_result(tmp_path,
                                                                            restart_before):
    requests = requests_of_the_loop(20)
    ref_state = State(tmp_path / "reference")
    try:
        ref = [await _turn(ref_state, r) for r in requests]
    finally:
        ref_state.close()
    folded = [k for k, r in enumerate(ref) if any(
        isinstance(m["content"], list) and any(
            b.get("type") == "tool_result" and "Summary" in str(b.get("content"))
            for b in m["content"]) for m in r.request["messages"])]
    assert folded and folded[0] < restart_before, "a summary sits in a tool result before"
    state = State(tmp_path / "state")
    try:
        for r in requests[:restart_before]:
            await _turn(state, r)
        await state.conversations.settled()
    finally:
        state.close()
    again = State(tmp_path / "state")
    try:
        after = [await _turn(again, r) for r in requests[restart_before:]]
    finally:
        again.close()
    for k, (a, b) in enumerate(zip(after, ref[restart_before:], strict=True)):
        assert a.request == b.request, f"request {restart_before + k}"
        assert a.tokens <= 3000
