"""The newest step of an agent's tool loop stays in a session's assembly beside the summary of
the steps before it, over real stdio: its thinking (3,600 tokens, never shortened) made it the
only turn of the window, which dropped it as "oldest turns dropped: the history share is full",
and the request was the summary alone (471 of 4,000 tokens), the step nowhere. The summary now
shrinks for it; a step that cannot fit even so is dropped saying what it is and why."""

from __future__ import annotations

import json

import pytest
from conftest import result

pytestmark = pytest.mark.e2e


def step(k: int, think_words: int = 40) -> list[dict]:
    return [{"role": "assistant", "content": [
                {"type": "thinking", "thinking": " ".join([f"plan{k}"] * think_words),
                 "signature": f"sig{k}"},
                {"type": "text", "text": f"Step {k}: " + "looked at the module and its callers "
                 "at length. " * 37},
                {"type": "tool_use", "id": f"toolu_{k}", "name": "read",
                 "input": {"path": f"m{k}.py"}},
                {"type": "tool_use", "id": f"toolu_{k}b", "name": "grep",
                 "input": {"pattern": f"x{k}"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{k}",
                 "content": f"def step_{k}():\n" + "    pass\n" * 300},
                {"type": "tool_result", "tool_use_id": f"toolu_{k}b",
                 "content": f"m{k}.py:1: x{k}"}]}]


async def assembled(daemon, newest_thinking: int) -> dict:
    turns = [{"role": "user", "content": "Refactor the steps."}]
    for k in range(10):
        turns += step(k, 40 if k < 9 else newest_thinking)
    await result(daemon, "ctx/session/open", {"sessionId": "A", "budget": 4000,
                                               "model": "claude-sonnet-4"})
    await result(daemon, "ctx/session/append", {"sessionId": "A", "messages": turns,
                                                 "format": "anthropic"})
    return await result(daemon, "ctx/assemble", {"sessionId": "A", "format": "anthropic"})


async def test_the_newest_step_with_long_thinking_is_kept_beside_the_summary(own_daemon):
    out = await assembled(own_daemon, 1500)
    assert out["compacted"]
    assert out["tokens"]["total"] <= 4000
    sent = json.dumps(out["messages"])
    assert "sig9" in sent and "m9.py" in sent and "x9" in sent  # the step, its thinking
    assert out["messages"][-1]["role"] == "user" and "toolu_9b" in json.dumps(
        out["messages"][-1])  # its results close the request
    assert not [e for e in out["dropped"] if "9" in e["summary"]]
    assert out["tokens"]["total"] >= 0.9 * 4000  # the summary gave it the room


async def test_a_newest_step_over_the_budget_even_shortened_is_said_for_what_it_is(own_daemon):
    out = await assembled(own_daemon, 4500)  # its thinking alone is over the budget
    assert out["tokens"]["total"] <= 4000
    gone = [e for e in out["dropped"] if "m9.py" in e["summary"]]
    assert gone and gone[0]["reason"].startswith("the newest exchange")
    assert "never shortened" in gone[0]["reason"]
    assert not any("oldest turns" in e["reason"] for e in out["dropped"])
