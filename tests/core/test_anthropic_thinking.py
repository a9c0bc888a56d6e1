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
    block = {"type": "thinking", "thinking": "short summary here", "signature": "A" * 1600}
    msgs = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [
        block, {"type": "text", "text": "done"}]}]

    def cost(model: str) -> int | None:
        decoded = decode("anthropic", {"model": model, "messages": msgs}, WordTokenizer())
        return decoded.messages[1].parts_tokens

    assert cost("claude-opus-4-5") == 300  # 1,600 base64 characters: 1,200 bytes
    assert cost("claude-sonnet-4-5") == 3  # its text's words
