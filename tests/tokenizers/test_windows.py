"""A request's window: the 1M window Claude models have from Opus and Sonnet 4.6 on (the table
said 200k for every Claude model, and the gateway fitted Claude Code's default model to 72k:
200k less the 128k it asks to answer in), the one a `context-1m-*` beta opens on Sonnet 4 and
4.5, read from the model's name however the provider spells it (a date, Bedrock's region
prefix, OpenRouter's dotted version), and the table's row for a Claude model named as Bedrock
names it (its window, encoding and correction; it was an unknown model's 128k)."""

from __future__ import annotations

import pytest

from ctxlayer.tokenizers.models import model_info
from ctxlayer.tokenizers.windows import context_window

LONG = ["context-1m-2025-08-07"]


@pytest.mark.parametrize(("model", "window"), [
    ("claude-sonnet-4-20250514", 1_000_000),
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", 1_000_000),
    ("anthropic/claude-sonnet-4.5", 1_000_000),
    ("anthropic/claude-opus-4.5", 200_000),
    ("claude-opus-4-5-20251101", 200_000),
    ("claude-opus-4-1-20250805", 200_000),
    ("claude-haiku-4-5", 200_000),
    ("claude-3-5-sonnet-20241022", 200_000),
    ("claude-3-7-sonnet-20250219", 200_000),
])
def test_the_1m_beta_opens_the_1m_window_where_the_model_has_it(model, window):
    assert context_window(model, LONG) == window
    assert context_window(model) == model_info(model).context_window == 200_000


@pytest.mark.parametrize("model", [
    "claude-opus-5-5",  # Claude Code's default
    "claude-opus-4-6", "anthropic/claude-opus-4.6", "claude-opus-4-7", "claude-opus-5",
    "claude-sonnet-4-6", "us.anthropic.claude-sonnet-4-6", "claude-sonnet-5-5",
    "claude-haiku-5-5", "claude-fable-5-1",
])
def test_the_models_whose_own_window_is_1m_have_it_with_no_beta(model):
    """Every path reads it: the gateway's request window and the table `ctx/prepare`, sessions
    and the CLI budget from."""
    assert model_info(model).context_window == 1_000_000
    assert context_window(model) == context_window(model, LONG) == 1_000_000
    assert model_info(model).default_budget == 1_000_000 - model_info(model).output_allowance


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
    ("us.anthropic.claude-opus-4-5-20251101-v1:0", 30_000),  # Bedrock's: it was 200,000
    ("anthropic.claude-opus-4-5-20251101-v1:0", 30_000),
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


@pytest.mark.parametrize(("model", "window"), [
    ("gpt-5.5", 1_050_000), ("openai/gpt-5.5-pro", 1_050_000), ("gpt-5.4-2026-03-05", 1_050_000),
    ("gpt-5.6-sol", 1_050_000), ("gpt-5.6-terra", 1_050_000), ("gpt-5.6-luna", 1_050_000),
    ("gpt-5.4-mini", 400_000), ("gpt-5.4-nano-2026-03-17", 400_000), ("gpt-5-codex", 400_000),
    ("gpt-5-chat-latest", 128_000), ("gpt-5.1-chat-latest", 128_000),
])
def test_gpt_5_windows_as_openai_publishes_them(model, window):
    """GPT-5.4 and later hold 1,050,000 (fitted to 400k before, compacted at 272k); the
    chat-latest snapshots hold 128k (given 400k before, so the provider refused what was sent)."""
    assert context_window(model) == model_info(model).context_window == window


@pytest.mark.parametrize("model", ["gpt-6.2-sol", "gpt-6.2-astra", "gpt-6-luna",
                                   "openai/gpt-6-sol"])
def test_gpt_6_windows_as_openai_publishes_them(model):
    """Codex 0.171's default model, gpt-6.2-sol, holds 1,050,000 with 128,000 out: it took the
    unknown row's 128k (and its 1.15 correction), so a Codex chat was compacted at a tenth of
    its window."""
    info = model_info(model)
    assert context_window(model) == info.context_window == 1_050_000
    assert (info.output_allowance, info.exact, info.correction) == (128_000, True, 1.0)


def test_qwen_codes_model_has_its_1m_window_and_a_local_qwen_the_tables():
    assert context_window("qwen3-coder-plus") == 1_000_000
    assert context_window("qwen3-coder:30b") == context_window("qwen2.5-coder") == 131_072


@pytest.mark.parametrize("key", ["claude-haiku-4-5", "claude-haiku-4.5"])
@pytest.mark.parametrize("model", [
    "claude-haiku-4-5-20251001", "us.anthropic.claude-haiku-4-5-20251001-v1:0",
    "anthropic/claude-haiku-4.5", "openrouter/anthropic/claude-haiku-4.5",
])
def test_a_users_window_holds_for_the_dotted_spelling_too(key, model):
    """`[gateway.models] claude-haiku-4-5 = 50000` held for Bedrock's and Vertex's spellings
    but not for OpenRouter's `anthropic/claude-haiku-4.5` (200,000)."""
    assert context_window(model, (), {key: 50_000}) == 50_000
    assert context_window("claude-sonnet-4-5", (), {key: 50_000}) == 200_000
    assert context_window("gpt-4-1106-preview", (), {"gpt-4.1": 5}) == 128_000
