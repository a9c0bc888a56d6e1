"""What the reasoning sent back on a Chat Completions turn costs, and where a provider ignores it.

An assistant message may carry the thinking it was answered with: `reasoning_content`
(DeepSeek, vLLM), `reasoning` (OpenRouter's text) and `reasoning_details` (OpenRouter's blocks:
texts and summaries, encrypted data and signatures by their size, as Anthropic's thinking
blocks are). Which of it the model reads again:
- DeepSeek (its thinking-mode guide): between two user messages, the reasoning of a turn in
  which the model called tools is read in every later request; that of a turn without tool
  calls is ignored once the user has written again;
- Claude behind OpenRouter (whose `reasoning_details` go to Anthropic as thinking blocks):
  Anthropic's rule for its models (anthropic_thinking.py), so on the models that keep only
  the last turn's thinking (Sonnet 4.5, Opus 4.1, Haiku 4.5, Claude 3) the reasoning before
  the last user message is dropped, tool loop or not.
Other servers are taken to read all of it: counting what a provider ignores only fits the
request tighter, while leaving out what it reads has it refused.
"""

from __future__ import annotations

from ctxlayer.core.formats import media
from ctxlayer.core.formats.anthropic_thinking import every_turn_read
from ctxlayer.core.tokens import Tokenizer

#: the rules by which a model ignores earlier turns' reasoning (`rule_of`)
DEEPSEEK, CLAUDE = "deepseek", "claude"


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


def rule_of(payload: dict) -> str | None:
    """By which rule the request's model ignores earlier turns' reasoning (None: it reads all)."""
    model = payload.get("model")
    if not isinstance(model, str):
        return None
    name = model.lower()
    if "deepseek" in name:
        return DEEPSEEK
    if "claude" in name:  # a name Anthropic's rule does not know reads every turn
        return None if every_turn_read({"model": name}) else CLAUDE
    return None


def last_user(messages: list) -> int:
    """The index of the last user message (-1: none): a Chat Completions message or a
    Responses item of role user (a call's output has none)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "user":
            return i
    return -1


def ignored(messages: list, turn: int, rule: str) -> frozenset[int]:
    """The assistant messages before `turn` (the last user message) whose reasoning is not read
    again: all of them by Claude's rule; by DeepSeek's, those of a turn, between two user
    messages, in which no tool was called."""
    if rule == CLAUDE:
        return frozenset(i for i in range(turn) if isinstance(messages[i], dict)
                         and messages[i].get("role") == "assistant")
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
