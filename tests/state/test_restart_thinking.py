"""An older model's tool loop with thinking (Sonnet 4.5 reads only the turn under way's): the
loop's thinking costs its seal while the loop runs, its text once the user writes again. The
window kept in the state folder is taken up across a restart all the same: the first request
after it is the request the daemon, never restarted, sends (before, the loop's messages,
costed anew, did not agree with the kept window's, and the conversation was compacted afresh).
The real State and tokenizer, Anthropic-format requests as a client sends them."""

from __future__ import annotations

from ctxlayer import protocol
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import chats

MODEL = "claude-sonnet-4-5"


def loop_then_a_question(rounds: int) -> list[list[dict]]:
    """Each request of a tool loop whose answers open with thinking (sealed: 4,000 base64
    characters), then the user's next question."""
    msgs: list[dict] = [{"role": "user", "content": "Find where the retry budget is computed."}]
    out = []
    for k in range(rounds):
        msgs += [{"role": "assistant", "content": [
                     {"type": "thinking", "thinking": f"Next, module {k}.",
                      "signature": f"{k:04d}" + "A" * 3996},
                     {"type": "tool_use", "id": f"toolu_{k}", "name": "read",
                      "input": {"path": f"src/mod_{k}.py"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}",
                                               "content": "\n".join(
                     f"def step_{k}_{j}(budget):  # retry budget {j}" for j in range(60))}]}]
        out.append(list(msgs))
    msgs += [{"role": "assistant", "content": [{"type": "text", "text": "It is in mod_3."}]},
             {"role": "user", "content": "Now sum it up for me."}]
    out.append(list(msgs))
    return out


async def test_a_restart_before_the_users_next_question_keeps_the_loops_window(tmp_path):
    requests = loop_then_a_question(24)

    async def turn(state, k):
        caller = Caller(state, source="prepare",
                        options=protocol.InitializationOptions(model=MODEL))
        return await chats.prepare(caller, protocol.PrepareParams(
            format="anthropic", request={"model": MODEL, "max_tokens": 1000,
                                         "messages": requests[k]}, budget=12000))

    ref_state = State(tmp_path / "reference")
    try:
        ref = [await turn(ref_state, k) for k in range(len(requests))]
    finally:
        ref_state.close()
    assert ref[-2].compacted, "the loop was compacted"
    loop, question = ref[-2].request["messages"], ref[-1].request["messages"]
    assert question[:len(loop) - 1] == loop[:-1]  # the window carried over the new turn

    state = State(tmp_path / "state")
    try:
        for k in range(len(requests) - 1):
            await turn(state, k)
        await state.conversations.settled()
    finally:
        state.close()
    again = State(tmp_path / "state")
    try:
        after = await turn(again, len(requests) - 1)
    finally:
        again.close()
    assert after.request == ref[-1].request, "the same request as without the restart"
