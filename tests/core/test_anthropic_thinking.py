"""Which Anthropic thinking blocks the provider reads again: a `clear_thinking` edit says,
else the model (Opus 4.5, Sonnet 4.6 and later keep every turn's; the ones before, and Claude
3, the last turn's). A block the provider reads costs what its signature seals; else its
text."""

from __future__ import annotations

import pytest

from ctxlayer.core.formats import decode
from ctxlayer.core.formats.anthropic_thinking import every_turn_read
from ctxlayer.core.tokens import WordTokenizer

KEEP_ALL = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
KEEP_ONE = {"edits": [{"type": "clear_thinking_20251015",
                       "keep": {"type": "thinking_turns", "value": 1}}]}


@pytest.mark.parametrize(("model", "management", "every"), [
    ("claude-opus-4-5-20251101", None, True),
    ("claude-opus-4-1", None, False),
    ("claude-sonnet-4-6", None, True),
    ("claude-sonnet-4-5-20250929", None, False),
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", None, False),
    ("claude-haiku-4-5", None, False),
    ("claude-3-7-sonnet-20250219", None, False),
    ("claude-opus-5-5", None, True),
    ("anthropic/claude-opus-4.5", None, True),  # OpenRouter's spelling
    ("anthropic/claude-sonnet-4.5", None, False),
    ("a-model-the-table-does-not-know", None, True),
    ("claude-sonnet-4-5", KEEP_ALL, True),
    ("claude-opus-5-5", KEEP_ONE, False),
    ("claude-opus-5-5", {"edits": [{"type": "clear_tool_uses_20250919"}]}, True),
])
def test_which_turns_keep_their_thinking(model, management, every):
    payload = {"model": model, "messages": []}
    if management is not None:
        payload["context_management"] = management
    assert every_turn_read(payload) is every


def test_a_block_costs_its_seal_only_where_it_is_read():
    """Two turns: the first answered after thinking, the second a tool loop under way. Where
    every turn's thinking is read, both blocks cost their seal; where only the last turn's,
    the first costs its text (the provider drops it), the loop's its seal."""
    def thought(k: int) -> dict:
        return {"type": "thinking", "thinking": "short summary here", "signature": "A" * 1600}

    call = {"type": "tool_use", "id": "t1", "name": "read", "input": {}}
    msgs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": [thought(1), {"type": "text", "text": "done"}]},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": [thought(2), call]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": "ok"}]}]

    def costs(model: str) -> list[int | None]:
        decoded = decode("anthropic", {"model": model, "messages": msgs}, WordTokenizer())
        return [m.parts_tokens for m in decoded.messages if m.role == "assistant"]

    assert costs("claude-opus-4-5") == [300, 300]  # 1,600 base64 characters: 1,200 bytes
    assert costs("claude-sonnet-4-5") == [3, 300]  # the first: its text's words
    msgs[1]["content"][0] = {"type": "redacted_thinking", "data": "B" * 1600}
    assert costs("claude-opus-4-5") == [301, 300]  # all sealed: what its data holds
    assert costs("claude-sonnet-4-5") == [None, 300]  # not read: nothing


def test_a_new_turn_makes_the_last_ones_thinking_cheap_on_the_next_decode():
    """Decoded against the previous turn (its messages taken over), the thinking of the turn
    that just ended is costed again: no longer read, it costs its text."""
    sealed = {"type": "thinking", "thinking": "short summary here", "signature": "A" * 1600}
    first = [{"role": "user", "content": "go"},
             {"role": "assistant", "content": [sealed, {"type": "text", "text": "done"}]}]
    payload = {"model": "claude-sonnet-4-5", "messages": first}
    before = decode("anthropic", payload, WordTokenizer())
    after = decode("anthropic", {**payload, "messages": [
        *first, {"role": "user", "content": "and now?"}]}, WordTokenizer(), previous=before)
    assert [m.parts_tokens for m in before.messages] == [None, 300]
    assert [m.parts_tokens for m in after.messages] == [None, 3, None]
