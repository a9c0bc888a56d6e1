"""ctx/trim keeps a caller's last trim: a re-trim of the same chat with one message more counts
only the new text, and answers exactly what a cold trim answers."""

from __future__ import annotations

from ctxlayer import protocol
from ctxlayer.state import Caller
from ctxlayer.state.requests import call

MODEL = "gpt-4o"


def chat(n: int) -> list[dict]:
    out = [{"role": "system", "content": "You are a careful coding assistant."}]
    for k in range(n):
        out += [{"role": "user", "content": f"Question {k}: why does step {k} fail? " * 20},
                {"role": "assistant", "content": f"Step {k} fails on line {k}. " * 40}]
    return out


async def test_a_re_trim_with_one_message_more_reuses_the_last_trim(caller, state):
    first = chat(30)
    again = [*first, {"role": "user", "content": "And step 30?"}]
    params = protocol.TrimParams(messages=first, budget=3000, format="openai")
    await call(caller, "ctx/trim", params)
    warm = await call(caller, "ctx/trim", protocol.TrimParams(
        messages=again, budget=3000, format="openai"))
    assert caller.trim_cache.reused == len(first), "the shared prefix was taken over"
    cold = await call(Caller(state, source="session",
                             options=protocol.InitializationOptions(model=MODEL)),
                      "ctx/trim", protocol.TrimParams(messages=again, budget=3000,
                                                      format="openai"))
    assert warm == cold
