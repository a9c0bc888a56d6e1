"""A request's window: the 1M window a `context-1m-*` beta opens on the models that have it,
read from the model's name however the provider spells it (a date, Bedrock's region prefix,
OpenRouter's dotted version), and the table's row for a Claude model named as Bedrock names it
(its window, encoding and correction; it was an unknown model's 128k)."""

from __future__ import annotations

import pytest

from ctxlayer.tokenizers.models import model_info
from ctxlayer.tokenizers.windows import context_window

LONG = ["context-1m-2025-08-07"]


@pytest.mark.parametrize(("model", "window"), [
    ("claude-sonnet-4-20250514", 1_000_000),
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", 1_000_000),
    ("claude-opus-4-6", 1_000_000),
    ("anthropic/claude-opus-4.6", 1_000_000),
    ("anthropic/claude-opus-4.5", 200_000),
    ("claude-opus-4-5-20251101", 200_000),
    ("claude-haiku-4-5", 200_000),
    ("claude-3-5-sonnet-20241022", 200_000),
])
def test_the_1m_beta_opens_the_1m_window_where_the_model_has_it(model, window):
    assert context_window(model, LONG) == window
    assert context_window(model) == 200_000


@pytest.mark.parametrize("model", ["anthropic.claude-opus-4-5-20251101-v1:0",
                                   "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
                                   "global.anthropic.claude-haiku-4-5-20251001-v1:0"])
def test_bedrock_names_read_as_claude(model):
    assert model_info(model).family == model_info("claude-sonnet-4-5").family == "anthropic"


@pytest.mark.parametrize(("model", "window"), [
    ("anthropic/claude-sonnet-4.5", 12_000),  # the key as the client sends the name
    ("Anthropic/Claude-Sonnet-4.5:beta", 12_000),
    ("claude-sonnet-4.5", 200_000),  # that key names OpenRouter's model only
    ("claude-opus-4-5", 30_000),  # a bare key: the bare name, behind any prefix
    ("bedrock/claude-opus-4-5-v1", 30_000),
    ("openai/gpt-4o", 64_000),  # the longer key wins
    ("azure/gpt-4o", 50_000),
])
def test_a_window_set_by_the_user_is_found_by_the_name_as_sent_or_bare(model, window):
    """`[gateway.models]` keys: a key with a provider's prefix (OpenRouter's `anthropic/...`)
    matched nothing before, since only the bare name was compared, and the window the user
    set was left unused."""
    overrides = {"anthropic/claude-sonnet-4.5": 12_000, "claude-opus-4-5": 30_000,
                 "gpt-4o": 50_000, "openai/gpt-4o": 64_000}
    assert context_window(model, (), overrides) == window
