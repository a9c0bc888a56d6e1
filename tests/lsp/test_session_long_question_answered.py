"""A long newest question with a reply or an agent's step after it stays a message of its own,
over real stdio: shortened in place as when it is last, the turns after it kept, the request
filling its budget. It was summarized instead: at a budget of 20,000 a question with a long log
and "Let me look." after it assembled to 3,587 tokens, the question only inside the summary,
cut to its share there (with nothing after it: 18,407 tokens, the question shortened in
place)."""

from __future__ import annotations

import pytest
from conftest import result

pytestmark = pytest.mark.e2e

BUDGET = 20000
LOG = "".join(f"2026-12-07 10:00:{i % 60:02d} INFO worker {i} processed batch {i * 7}\n"
              for i in range(6000))
QUESTION = ("Why does the worker crash? Here is the log:\n" + LOG
            + "Traceback (most recent call last):\nValueError: bad batch 41993\n")
AFTER = {
    "none": [],
    "reply": [{"role": "assistant", "content": "Let me look.", "id": "r"}],
    "step": [{"role": "assistant", "content": "Let me look at the worker.", "id": "r",
              "toolCalls": [{"id": "c1", "name": "read_file",
                             "arguments": "{\"path\": \"src/worker.py\"}"}]},
             {"role": "tool", "toolCallId": "c1", "id": "t",
              "content": "def run(batch):\n    raise ValueError(batch)\n"}],
}


@pytest.mark.parametrize("after", sorted(AFTER))
async def test_the_long_question_stays_in_place_with_what_follows_it(own_daemon, after):
    await result(own_daemon, "ctx/session/open", {"sessionId": "s", "budget": BUDGET})
    await result(own_daemon, "ctx/session/append", {"sessionId": "s", "messages": [
        {"role": "user", "content": "hello", "id": "m0"},
        {"role": "assistant", "content": "hi, how can I help?", "id": "a0"},
        {"role": "user", "content": QUESTION, "id": "q"}, *AFTER[after]]})
    first = await result(own_daemon, "ctx/assemble", {"sessionId": "s"})
    ids = [m.get("id") for m in first["messages"]]
    tail = [m["id"] for m in AFTER[after]]
    assert ids[-1 - len(tail):] == ["q", *tail], ids
    question = next(m["content"] for m in first["messages"] if m.get("id") == "q")
    # shortened in place: its head and its tail (the error) kept
    assert question.startswith("Why does the worker crash?")
    assert "ValueError: bad batch 41993" in question
    assert BUDGET * 0.8 <= first["tokens"]["total"] <= BUDGET, first["tokens"]
    # an unchanged session assembles to the same request (no further compaction)
    again = await result(own_daemon, "ctx/assemble", {"sessionId": "s"})
    assert again["messages"] == first["messages"]
    assert again["compacted"] is False
