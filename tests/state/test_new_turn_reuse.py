"""A new turn's cache reuse is the prefix the provider renders as before. On a model that
reads only the current turn's reasoning (gpt-5.4 and before, Codex sends every turn's back),
a new user message stops the earlier turn's reasoning items from being rendered: the prompt
the provider cached is the same only up to the first of them. Codex's probe: turn 1 ended at
17,795 tokens, the next turn's first request counted 15,647 and was listed with an estimated
reuse of 17.8k (the whole previous result, costed with the reasoning rendered then)."""

from __future__ import annotations

from ctxlayer import protocol
from ctxlayer.state import Caller
from ctxlayer.state.requests import chats

MODEL = "gpt-5.4"
TOOLS = [{"type": "function", "name": "exec_command", "description": "Run a command.",
          "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]
SEALED = "gAAAA" + "x7Kq" * 3000  # a reasoning item's sealed content: thousands of tokens


def reasoning(k: int) -> dict:
    return {"type": "reasoning", "id": f"rs_{k}", "summary": [], "encrypted_content": SEALED}


def loop(first: str, rounds: int, at: int) -> list[dict]:
    """A user message and an agent's tool loop on it, each call after its reasoning."""
    items: list[dict] = [{"role": "user", "content": first}]
    for k in range(at, at + rounds):
        items += [reasoning(k),
                  {"type": "function_call", "call_id": f"c{k}", "name": "exec_command",
                   "arguments": '{"cmd": "cat build.log"}'},
                  {"type": "function_call_output", "call_id": f"c{k}",
                   "output": f"line {k}: step {k} of the build passed"}]
    return items


async def turn(caller: Caller, items: list[dict], cid: str = "codex"
               ) -> protocol.PrepareResult:
    return await chats.prepare(caller, protocol.PrepareParams(
        format="responses", conversation_id=cid, budget=200_000,
        request={"model": MODEL, "instructions": "You are Codex.", "input": items,
                 "tools": TOOLS}))


async def test_a_new_turn_reuses_no_more_than_the_prefix_rendered_alike(state):
    caller = Caller(state, source="gateway",
                    options=protocol.InitializationOptions(model=MODEL))
    first = loop("Check the build log, many times.", 3, 0)
    before = await turn(caller, first)
    answered = [*first, {"role": "assistant", "content": "The build passed."}]
    question = "Once more, and say which step took the most checks. " * 20
    opening = await turn(caller, [*answered, *loop(question, 0, 3)])
    # the turn's own reasoning is read, an earlier turn's no more: the new request is smaller
    assert opening.tokens < before.tokens
    (listed,) = (await chats.conversations(caller, protocol.Empty())).conversations
    assert listed.cache_reuse_tokens == opening.cache_reuse_tokens
    # shared alike: the tools, the instructions and the first question, up to the first
    # reasoning item, which the provider no longer renders (what a chat of that alone sends,
    # but the reply's priming)
    alone = await turn(caller, first[:1], cid="alone")
    assert alone.tokens - 5 <= opening.cache_reuse_tokens <= alone.tokens
    assert opening.cache_reuse_tokens < opening.tokens - 200  # the new question is not
