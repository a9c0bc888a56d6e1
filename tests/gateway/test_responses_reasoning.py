"""Reasoning items on the Responses API, as Codex sends them: every turn's reasoning goes back
with its `encrypted_content`, but the provider renders only what `reasoning.context` says
(left to the model: the current turn's on gpt-5.5 and before, every turn's from gpt-5.6). The
gateway costs a reasoning item by its sealed size only where the provider reads it, so a chat
on an older model fills its budget as the provider counts it, and one on gpt-5.6 is fitted
before the provider could refuse it."""

from __future__ import annotations

import pytest
from gateway_stack import fresh_stack, prose

WINDOW, ANSWER = 16_000, 1000

#: model, `reasoning` of the request, and whether the provider reads every turn's reasoning
WAYS = {"gpt-5.4": ("gpt-5.4", None, False),
        "gpt-5.6": ("gpt-5.6", None, True),
        "gpt-5.6 current_turn": ("gpt-5.6", {"effort": "high", "context": "current_turn"}, False)}


def chat(stack, model: str, reasoning: dict | None, turns: int) -> list[dict]:
    """`turns` questions, each answer's output items (its reasoning first) sent back whole."""
    client = stack.openai()
    items: list[dict] = []
    extra = {"reasoning": reasoning} if reasoning else {}
    for k in range(turns):
        items.append({"role": "user", "content": prose(f"question {k}", 400)})
        answer = client.responses.create(model=model, input=items, store=False,
                                         max_output_tokens=ANSWER,
                                         include=["reasoning.encrypted_content"], **extra)
        output = [o.model_dump(exclude_none=True) for o in answer.output]
        assert output[0]["type"] == "reasoning"
        items += output
    return items


@pytest.mark.parametrize("way", WAYS)
def test_reasoning_is_costed_where_the_provider_reads_it(tmp_path, way):
    model, reasoning, every_turn = WAYS[way]
    # about 800 tokens of reasoning a turn, sealed: 30 turns of it are 24k, past the window
    with fresh_stack(tmp_path, {model: WINDOW}, windows={model: WINDOW},
                     thinking_words=600) as stack:
        items = chat(stack, model, reasoning, 30)
        sent = stack.model_requests()
    sealed = sum(len(i.get("encrypted_content", "")) for i in items)
    assert sealed > 2 * WINDOW * 4, "the chat's reasoning alone is past the window"
    # every request fitted on its first try
    assert len(sent) == 30 and all(r["status"] == 200 for r in sent), \
        [r["problems"] for r in sent if r["problems"]]
    question = [i for i in items if i.get("role") == "user"][-1]
    assert sent[-1]["body"]["input"][-1] == question  # the newest question, as it came
    late = [r["prompt_tokens"] for r in sent[-10:]]
    # where the provider reads the current turn only, the budget is filled with the history
    # it reads (86% on average; costed every turn's, these requests held 42%); where it reads
    # every turn's, the request still fits and the history is compacted to make room
    assert sum(late) / len(late) > 0.65 * (WINDOW - ANSWER), late
    if every_turn:
        assert any("[Summary of" in str(r["body"]["input"]) for r in sent[-10:])
    else:
        assert max(r["prompt_tokens"] for r in sent) < 0.5 * sealed / 4
