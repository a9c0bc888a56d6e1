"""A chat with extended thinking, as Claude Code runs it (`thinking: {type: "adaptive", display:
"omitted"}`, every turn's thinking kept): each thinking block comes back with no text, the
whole thinking sealed in its signature, and the provider counts all of it. The gateway costs a
block by its signature, so its fitted requests stay in the window on the first try, and it
sends the latest assistant message's thinking as it came (the provider refuses it changed or
gone). An older model (Sonnet 4.5) reads only the last turn's thinking: the tool loop under
way costs its signatures, an earlier turn's thinking its text. Chat Completions reasoning sent
back (DeepSeek's `reasoning_content`) is costed too, where DeepSeek reads it."""

from __future__ import annotations

import json
from collections.abc import Callable

import anthropic
import pytest
from gateway_stack import fresh_stack, prose

MODEL = "claude-opus-5-5"
WINDOW = 16_000
THINKING = {"type": "adaptive", "display": "omitted"}
TOOLS = [{"name": "read", "description": "Read a file.",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]


BETAS = ["context-management-2025-06-27", "interleaved-thinking-2025-05-14"]


def read_again_and_again(stack, messages, model: str, thinking: dict, rounds: int,
                         **extra) -> list[dict]:
    """The stand-in agent's `rounds` reads of a.py and its answer, each answer after its
    thinking, sent back as it came (the SDK's blocks); the chat's history."""
    stack.standin.agent(rounds, [{"name": "read", "arguments": {"path": "a.py"}}])
    history: list[dict] = [{"role": "user", "content": "Read a.py again and again."}]
    for k in range(rounds + 1):
        answer = messages.create(model=model, max_tokens=2000, messages=history, tools=TOOLS,
                                 thinking=thinking, **extra)
        blocks = [b.model_dump(exclude_none=True) for b in answer.content]
        assert blocks[0]["type"] == "thinking"
        assert len(blocks[0]["signature"]) > 4 * len(blocks[0]["thinking"])
        history.append({"role": "assistant", "content": blocks})
        if answer.stop_reason != "tool_use":
            break
        history.append({"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": blocks[-1]["id"],
            "content": prose(f"a.py, read {k}", 250)}]})
    return history


KEEP_ALL = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
#: Claude Code's way (every turn's thinking kept, none shown), and an older model's (Sonnet
#: 4.5 keeps the last turn's thinking, here the whole tool loop, and shows a summary)
WAYS = {"claude-code": (MODEL, THINKING, KEEP_ALL),
        "sonnet-4-5": ("claude-sonnet-4-5", {"type": "enabled", "budget_tokens": 1024}, None)}


@pytest.mark.parametrize("way", WAYS)
def test_hidden_thinking_is_costed_and_the_latest_goes_back_as_it_came(tmp_path, way):
    model, thinking, management = WAYS[way]
    rounds = 24
    extra = {"context_management": management} if management else {}
    # 600 words of thinking a turn: about 1,000 tokens its text never shows
    with fresh_stack(tmp_path, {model: WINDOW}, windows={model: WINDOW},
                     thinking_words=600) as stack:
        client = stack.anthropic()
        history = read_again_and_again(stack, client.beta.messages, model, thinking, rounds,
                                       betas=BETAS, **extra)
        answer = history[-1]["content"]
        sent = stack.model_requests()
        with pytest.raises(anthropic.BadRequestError, match="Invalid `signature`"):
            changed = history[-3:-1]  # the last call and its result, its thinking edited
            changed[0] = {**changed[0], "content": [
                {**changed[0]["content"][0], "thinking": "x"}, *changed[0]["content"][1:]]}
            client.messages.create(model=model, max_tokens=100, thinking=thinking, tools=TOOLS,
                                   messages=[history[0], *changed])
    assert answer[-1]["text"].startswith(f"stand-in answer after {rounds} tool results")
    # every request fitted on its first try: none refused as over the window (or otherwise)
    assert len(sent) == rounds + 1 and all(r["status"] == 200 for r in sent), \
        [r["problems"] for r in sent if r["problems"]]
    hidden = sum(len(b.get("signature", "")) for m in history for b in m["content"]
                 if isinstance(b, dict) and b["type"] == "thinking")
    assert hidden > 3 * WINDOW, "the chat's thinking alone is far past the window"
    assert max(r["prompt_tokens"] for r in sent) > WINDOW // 2, "the budget is used"
    for request in sent[1:]:
        latest = [m for m in request["body"]["messages"] if m["role"] == "assistant"][-1]
        (original,) = [m for m in history if m["role"] == "assistant" and
                       m["content"][-1] == latest["content"][-1]]
        assert latest["content"] == original["content"]  # its thinking byte for byte


def test_reasoning_sent_back_on_chat_completions_is_costed(tmp_path):
    """A DeepSeek tool loop on Chat Completions: each assistant turn carries about 700 tokens of
    `reasoning_content`, which the provider reads again in a turn that calls tools. The gateway
    costs it, so the loop fits its window on every first try; by the content alone the provider
    refused its prompts as over the window."""
    model, window, rounds = "deepseek-v4-pro", 6000, 14
    tools = [{"type": "function", "function": {"name": "read", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}}}}]
    with fresh_stack(tmp_path, {model: window}, windows={model: window}) as stack:
        stack.standin.agent(rounds, [{"name": "read", "arguments": {"path": "a.py"}}])
        client = stack.openai()
        messages: list[dict] = [{"role": "user", "content": "Read a.py again and again."}]
        for k in range(rounds + 1):
            answer = client.chat.completions.create(model=model, messages=messages,
                                                    tools=tools, max_tokens=500)
            reply = answer.choices[0].message.model_dump(exclude_none=True)
            messages.append({**reply, "reasoning_content": prose(f"reasoning {k}", 400)})
            if not reply.get("tool_calls"):
                break
            messages.append({"role": "tool", "tool_call_id": reply["tool_calls"][0]["id"],
                             "content": prose(f"a.py, read {k}", 60)})
        sent = stack.model_requests()
    assert [r["status"] for r in sent] == [200] * (rounds + 1), [r["problems"] for r in sent]
    assert max(r["prompt_tokens"] for r in sent) > window // 2


def questions_with_reasoning(stack, model: str, answer: int,
                             reasoning: Callable[[str], dict]) -> list[dict]:
    """Thirty questions on Chat Completions, each answer sent back with the fields
    `reasoning` makes of about 700 tokens of its reasoning; the requests the stand-in got."""
    client = stack.openai()
    messages: list[dict] = []
    for k in range(30):
        messages.append({"role": "user", "content": prose(f"question {k}", 200)})
        reply = client.chat.completions.create(model=model, messages=messages,
                                               max_tokens=answer)
        messages.append({"role": "assistant", "content": reply.choices[0].message.content,
                         **reasoning(prose(f"reasoning {k}", 400))})
    return stack.model_requests()


def test_reasoning_deepseek_ignores_is_not_costed(tmp_path):
    """DeepSeek ignores the `reasoning_content` of a turn without tool calls once the user has
    written again. Thirty such turns, about 700 tokens of reasoning each: the gateway costs
    only what the provider reads, so the requests fill their budget as the provider counts
    them (85% on average for the last ten; costed whole, 38%)."""
    model, window, answer = "deepseek-v4-pro", 12_000, 500
    with fresh_stack(tmp_path, {model: window}, windows={model: window}) as stack:
        sent = questions_with_reasoning(stack, model, answer,
                                        lambda text: {"reasoning_content": text})
    assert all(r["status"] == 200 for r in sent), [r["problems"] for r in sent if r["problems"]]
    late = [r["prompt_tokens"] for r in sent[-10:]]
    assert sum(late) / len(late) > 0.65 * (window - answer), late


@pytest.mark.parametrize(("model", "every_turn"), [("anthropic/claude-sonnet-4.5", False),
                                                   ("anthropic/claude-opus-4.5", True)])
def test_claudes_reasoning_behind_openrouter_is_costed_as_anthropic_reads_it(tmp_path, model,
                                                                             every_turn):
    """Claude on Chat Completions through OpenRouter: its thinking comes back as `reasoning`
    and `reasoning_details` (the text, and the signature sealing it), which OpenRouter sends to
    Anthropic as thinking blocks. Sonnet 4.5 reads only the turn under way's, so thirty turns of
    about 700 tokens of it fill the budget as the provider counts them (86% on average for the
    last ten requests; costed whole, 38%); Opus 4.5 reads every turn's, and the chat still fits
    on every first try, compacted. The window is set under the name as OpenRouter sends it."""
    window, answer = 12_000, 500
    with fresh_stack(tmp_path, {model: window}, windows={model: window}) as stack:
        sent = questions_with_reasoning(stack, model, answer, lambda text: {
            "reasoning": text, "reasoning_details": [
                {"type": "reasoning.text", "text": text, "signature": "c2lnbmVk" * 20,
                 "format": "anthropic-claude-v1", "index": 0}]})
    assert all(r["status"] == 200 for r in sent), [r["problems"] for r in sent if r["problems"]]
    late = [r["prompt_tokens"] for r in sent[-10:]]
    if every_turn:
        assert any("[Summary of" in json.dumps(r["body"]["messages"]) for r in sent[-10:])
    else:
        assert sum(late) / len(late) > 0.65 * (window - answer), late


def test_thinking_the_provider_drops_is_not_costed_whole(tmp_path):
    """Claude Sonnet 4.5 keeps only the last turn's thinking unless asked otherwise: each
    earlier turn's thinking (here about 1,000 tokens a turn, sealed in its signature) is
    dropped before the model reads the prompt. Costed whole, it would take the room of the
    history the provider reads: the gateway costs it by its text there, and the chat's
    requests fill their budget as the provider counts them."""
    model, window, answer = "claude-sonnet-4-5", 16_000, 1000
    with fresh_stack(tmp_path, {model: window}, windows={model: window},
                     thinking_words=600) as stack:
        client = stack.anthropic()
        history: list[dict] = []
        for k in range(30):
            history.append({"role": "user", "content": prose(f"question {k}", 500)})
            reply = client.messages.create(
                model=model, max_tokens=answer, messages=history,
                thinking={"type": "enabled", "budget_tokens": 1024})
            history.append({"role": "assistant",
                            "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        sent = stack.model_requests()
    assert all(r["status"] == 200 for r in sent), [r["problems"] for r in sent if r["problems"]]
    late = [r["prompt_tokens"] for r in sent[-10:]]  # between compaction steps, rising
    assert sum(late) / len(late) > 0.65 * (window - answer), late  # costed whole: 0.48


def test_a_new_turn_keeps_the_compacted_prefix_of_an_older_models_loop(tmp_path):
    """Sonnet 4.5 stops reading a tool loop's thinking once the user writes again, so those
    blocks cost less from then on; the messages show as before, so the gateway's window
    carries over: the next request starts as the last one did, summary and all (when the
    cheaper costs made the loop's messages look new, it was compacted from scratch: the next
    request shared not one leading message with the last)."""
    model, thinking = WAYS["sonnet-4-5"][:2]
    rounds = 16
    with fresh_stack(tmp_path, {model: WINDOW}, windows={model: WINDOW},
                     thinking_words=600) as stack:
        messages = stack.anthropic().messages
        history = read_again_and_again(stack, messages, model, thinking, rounds)
        history.append({"role": "user", "content": "Now sum it up for me."})
        messages.create(model=model, max_tokens=2000, messages=history, tools=TOOLS,
                        thinking=thinking)
        sent = stack.model_requests()
    assert all(r["status"] == 200 for r in sent), [r["problems"] for r in sent if r["problems"]]
    loop, after = sent[-2]["body"]["messages"], sent[-1]["body"]["messages"]
    assert "[Summary of" in json.dumps(loop[:2])  # the loop was compacted
    shared = next(i for i, (a, b) in enumerate(zip(loop, after, strict=False)) if a != b)
    assert shared >= len(loop) - 2, (shared, len(loop))
