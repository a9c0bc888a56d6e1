"""What the reasoning sent back on a Chat Completions turn costs, and where a provider ignores it.

An assistant message may carry the thinking it was answered with: `reasoning_content`
(DeepSeek, vLLM), `reasoning` (OpenRouter's text) and `reasoning_details` (OpenRouter's blocks:
texts and summaries, encrypted data and signatures by their size, as Anthropic's thinking
blocks are). DeepSeek's documentation (thinking mode) says which of it the model reads again:
between two user messages, the reasoning of a turn in which the model called tools is read in
every later request; that of a turn without tool calls is ignored once the user has written
again. Other servers are taken to read all of it: counting what a provider ignores only fits
the request tighter, while leaving out what it reads has it refused.
"""

from __future__ import annotations

from ctxlayer.core.formats import media
from ctxlayer.core.tokens import Tokenizer


def reasoning_tokens(native: dict, counter: Tokenizer) -> int:
    """What an assistant message's reasoning costs where it is read. OpenRouter sends the text
    twice, in `reasoning` and in the details: the larger of the two is the cost."""
    said = sum(counter.count(native[key]) for key in ("reasoning_content", "reasoning")
               if isinstance(native.get(key), str))
    details = native.get("reasoning_details")
    blocks = 0
    for d in details if isinstance(details, list) else ():
        if not isinstance(d, dict):
            continue
        texts = sum(counter.count(d[key]) for key in ("text", "summary")
                    if isinstance(d.get(key), str))
        sealed = max((media.encrypted_tokens(d[key], counter) for key in ("data", "signature")
                      if isinstance(d.get(key), str)), default=0)
        blocks += max(texts, sealed)
    return max(said, blocks)


def ignores_earlier_turns(payload: dict) -> bool:
    """Whether the request's model ignores the reasoning of earlier turns without tool calls."""
    model = payload.get("model")
    return isinstance(model, str) and "deepseek" in model.lower()


def last_user(messages: list) -> int:
    """The index of the last user message (-1: none)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "user":
            return i
    return -1


def ignored(messages: list, turn: int) -> frozenset[int]:
    """The assistant messages before `turn` (the last user message) whose reasoning is not read
    again: those of a turn, between two user messages, in which no tool was called."""
    out: set[int] = set()
    answers: list[int] = []
    called = False
    for i in range(turn + 1):
        m = messages[i]
        role = m.get("role") if isinstance(m, dict) else None
        if role == "user":
            if not called:
                out.update(answers)
            answers, called = [], False
        elif role == "assistant":
            answers.append(i)
            called = called or bool(m.get("tool_calls")) or m.get("function_call") is not None
    return frozenset(out)
