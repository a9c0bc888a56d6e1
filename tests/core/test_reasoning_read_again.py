"""Which reasoning sent back the provider reads again: on Chat Completions DeepSeek's
`reasoning_content` (a turn's is read later only when the turn called tools) and Claude's behind
OpenRouter (Anthropic's rule), and the Responses API's reasoning items (`reasoning.context`,
else the model)."""

from __future__ import annotations

import pytest

from ctxlayer.core.formats import decode
from ctxlayer.core.formats.openai_reasoning import ignored, last_user
from ctxlayer.core.formats.responses_reasoning import every_turn_read
from ctxlayer.core.tokens import WordTokenizer

WORDS = WordTokenizer()
THOUGHT = "weigh " * 50  # 50 words of reasoning


def chat(turns: int, tools_every: int = 0) -> list[dict]:
    """`turns` questions, each answered after 50 words of reasoning; every `tools_every`-th
    turn (0: none) goes through a tool call first."""
    out: list[dict] = []
    for k in range(turns):
        out.append({"role": "user", "content": f"question {k}"})
        if tools_every and k % tools_every == 0:
            out.append({"role": "assistant", "content": None, "reasoning_content": THOUGHT,
                        "tool_calls": [{"id": f"c{k}", "type": "function", "function": {
                            "name": "read", "arguments": "{}"}}]})
            out.append({"role": "tool", "tool_call_id": f"c{k}", "content": "text"})
        out.append({"role": "assistant", "content": f"answer {k}", "reasoning_content": THOUGHT})
    return out


def test_a_turn_without_tool_calls_is_not_read_again():
    msgs = [*chat(4, tools_every=2), {"role": "user", "content": "and now?"}]
    turn = last_user(msgs)
    assert turn == len(msgs) - 1
    skipped = ignored(msgs, turn, "deepseek")
    # turns 0 and 2 called a tool: both their assistant messages are read; 1 and 3 are not
    assert sorted(msgs[i]["content"] for i in skipped) == ["answer 1", "answer 3"]


def costs(payload: dict, previous=None) -> list[int]:
    d = decode("openai", payload, WORDS, previous=previous)
    return [m.parts_tokens or 0 for m in d.messages if m.role == "assistant"]


def test_deepseek_costs_only_what_it_reads_and_other_models_all():
    msgs = [*chat(3), {"role": "user", "content": "and now?"}]
    assert costs({"model": "deepseek-v4-pro", "messages": msgs}) == [0, 0, 0]
    assert costs({"model": "qwen3-coder", "messages": msgs}) == [50, 50, 50]
    # the turn under way: its reasoning is read
    assert costs({"model": "deepseek-v4-pro", "messages": msgs[:-1]}) == [0, 0, 50]


def test_claude_behind_openrouter_follows_anthropics_rule():
    """Sonnet 4.5 reads only the turn under way's thinking, tool loop or not; Opus 4.5 every
    turn's; a name the rule does not know, every turn's."""
    msgs = [*chat(3, tools_every=1), {"role": "user", "content": "and now?"}]
    assert costs({"model": "anthropic/claude-sonnet-4.5", "messages": msgs}) == [0] * 6
    assert costs({"model": "anthropic/claude-opus-4.5", "messages": msgs}) == [50] * 6
    assert costs({"model": "claude-3-7-sonnet-latest", "messages": msgs}) == [0] * 6
    assert costs({"model": "anthropic/claude-3.7-sonnet", "messages": msgs}) == [0] * 6
    assert costs({"model": "anthropic/claude-next", "messages": msgs}) == [50] * 6
    # the turn under way: its whole tool loop is read
    assert costs({"model": "anthropic/claude-sonnet-4.5", "messages": msgs[:-1]}) == \
        [0, 0, 0, 0, 50, 50]


@pytest.mark.parametrize("tools_every", [0, 2])
@pytest.mark.parametrize("models", [("deepseek-v4-pro",), ("anthropic/claude-sonnet-4.5",),
                                    ("deepseek-v4-pro", "anthropic/claude-sonnet-4.5", "gpt-4o")])
def test_a_decode_that_reuses_the_previous_one_costs_as_a_fresh_one(tools_every, models):
    """Turn by turn, the decode that starts from the previous request's gives each message the
    cost a decode from nothing gives it, though a new user message changes what came before
    (and so does another model, taken in turns in the last case)."""
    msgs = chat(6, tools_every)
    previous = None
    for end in range(1, len(msgs) + 1):
        payload = {"model": models[end % len(models)], "messages": msgs[:end]}
        warm = decode("openai", payload, WORDS, previous=previous)
        cold = decode("openai", payload, WORDS)
        assert warm.messages == cold.messages, end
        previous = warm


@pytest.mark.parametrize(("model", "context", "every"), [
    ("gpt-5.4", None, False), ("gpt-5-codex", None, False), ("o4-mini", None, False),
    ("gpt-5.6", None, True), ("gpt-5.6-codex", None, True), ("gpt-6", None, True),
    ("grok-4", None, True), ("gpt-5.6", "current_turn", False), ("gpt-5.4", "all_turns", True),
    ("gpt-5.4", "auto", False), ("openai/gpt-5.2", None, False),
])
def test_the_responses_reasoning_context_follows_the_request_then_the_model(model, context,
                                                                             every):
    payload: dict = {"model": model, "input": []}
    if context:
        payload["reasoning"] = {"effort": "high", "context": context}
    assert every_turn_read(payload) is every


def reasoning_costs(model: str, summary_words: int, sealed_chars: int) -> list[int]:
    """What each assistant turn's reasoning costs on `model`: a summary of `summary_words`
    words and an encrypted_content of `sealed_chars` base64 characters."""
    items: list[dict] = []
    for k in range(3):
        items += [{"role": "user", "content": f"question {k}"},
                  {"type": "reasoning", "id": f"rs_{k}", "encrypted_content": "A" * sealed_chars,
                   "summary": [{"type": "summary_text", "text": "weigh " * summary_words}]},
                  {"type": "message", "role": "assistant",
                   "content": [{"type": "output_text", "text": f"answer {k}"}]}]
    d = decode("responses", {"model": model, "input": [*items, {"role": "user", "content": "?"}]},
               WORDS)
    return [m.parts_tokens or 0 for m in d.messages if m.role == "assistant"]


@pytest.mark.parametrize(("summary_words", "sealed_chars"), [(40, 800), (400, 800), (0, 800)])
def test_a_read_reasoning_item_costs_the_larger_of_its_summary_and_what_it_seals(
        summary_words, sealed_chars):
    """The provider renders the sealed reasoning, not the summary written from it: a reasoning
    item it reads again costs the larger of the two, as Anthropic's thinking does, never both
    (gpt-5.6 with 190-word summaries: counted 6,818 where the provider counted 4,100)."""
    sealed = sealed_chars * 3 // 16  # media.encrypted_tokens, the word tokenizer uncorrected
    every = reasoning_costs("gpt-5.6", summary_words, sealed_chars)
    assert every == [max(summary_words, sealed)] * 3
    # gpt-5.4 reads only the turn under way's: none here, so each costs its summary
    assert reasoning_costs("gpt-5.4", summary_words, sealed_chars) == [summary_words] * 3
