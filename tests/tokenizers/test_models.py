"""The model table's rows for OpenAI names a prefix of another row used to take: GPT-4 Turbo's
older names and GPT-4.5 Preview took `gpt-4`'s 8,192 window; ChatGPT-4o, codex-mini and
gpt-oss were unknown models (128k with a 15% correction and no reasoning)."""

from __future__ import annotations

import pytest

from ctxlayer.tokenizers.models import model_info

O2, CL = "o200k_base", "cl100k_base"


@pytest.mark.parametrize(("model", "encoding", "window", "output", "reasoning"), [
    ("gpt-4-turbo", CL, 128_000, 4_096, False),
    ("gpt-4-turbo-preview", CL, 128_000, 4_096, False),
    ("gpt-4-1106-preview", CL, 128_000, 4_096, False),
    ("gpt-4-0125-preview", CL, 128_000, 4_096, False),
    ("gpt-4-vision-preview", CL, 128_000, 4_096, False),
    ("gpt-4-1106-vision-preview", CL, 128_000, 4_096, False),
    ("gpt-4.5-preview", O2, 128_000, 16_384, False),
    ("gpt-4.5-preview-2025-02-27", O2, 128_000, 16_384, False),
    ("chatgpt-4o-latest", O2, 128_000, 16_384, False),
    ("openai/chatgpt-4o-latest", O2, 128_000, 16_384, False),
    ("codex-mini-latest", O2, 200_000, 100_000, True),
    ("gpt-oss-120b", O2, 131_072, 32_768, True),
    ("gpt-oss-20b", O2, 131_072, 32_768, True),
    ("gpt-oss:20b", O2, 131_072, 32_768, True),  # as Ollama names it
    ("openai/gpt-oss-120b", O2, 131_072, 32_768, True),
])
def test_each_name_has_its_documented_window(model, encoding, window, output, reasoning):
    info = model_info(model)
    assert (info.family, info.encoding, info.exact) == ("openai", encoding, True)
    assert (info.context_window, info.output_allowance) == (window, output)
    assert info.reasoning_model is info.native_reasoning is reasoning
    assert info.default_budget == window - output


@pytest.mark.parametrize(("model", "window"), [
    ("gpt-4", 8_192), ("gpt-4-0613", 8_192), ("gpt-4-32k", 32_768), ("gpt-4-32k-0613", 32_768),
    ("gpt-4o", 128_000), ("gpt-4.1", 1_047_576),
])
def test_the_rows_around_them_keep_their_windows(model, window):
    assert model_info(model).context_window == window


@pytest.mark.parametrize(("model", "base"), [
    ("gpt-35-turbo", "gpt-3.5-turbo"),  # Azure's deployment names: no dot allowed
    ("gpt-35-turbo-16k", "gpt-3.5-turbo-16k"),
    ("azure/gpt-35-turbo-0125", "gpt-3.5-turbo-0125"),
    ("ft:gpt-3.5-turbo-0125:acme::x1", "gpt-3.5-turbo-0125"),  # fine-tuned: its base's
    ("ft:gpt-4o-mini-2024-07-18:acme:support:x2", "gpt-4o-mini-2024-07-18"),
    ("ft:gpt-4.1-2025-04-14:acme::x3", "gpt-4.1-2025-04-14"),
])
def test_azure_and_fine_tuned_names_are_their_base_model(model, base):
    """`gpt-35-turbo` and `ft:...` names were unknown: o200k with a 15% correction, not exact,
    a 128k window (a 33,368-token chat went whole to a 16,385-token model). tiktoken maps them
    to their base's encoding; so do we, and to its window."""
    info, of_base = model_info(model), model_info(base)
    assert (info.family, info.encoding, info.exact, info.correction) == (
        "openai", of_base.encoding, True, 1.0)
    assert (info.context_window, info.output_allowance) == (
        of_base.context_window, of_base.output_allowance)


@pytest.mark.parametrize("model", [
    "us-gov.anthropic.claude-3-5-sonnet-20240620-v1:0",  # Bedrock GovCloud's inference profile
    "arn:aws-us-gov:bedrock:us-gov-west-1:123456789012:inference-profile/"
    "us-gov.anthropic.claude-3-5-sonnet-20240620-v1:0",
])
def test_a_govcloud_profile_is_claude(model):
    """`us-gov.anthropic.claude-...` was an unknown model (o200k, a 128k window) and not
    Claude: a body for it was not read as Anthropic's."""
    from ctxlayer.core.model_names import is_claude, model_key

    assert is_claude(model) and model_key(model) == "claude-3-5-sonnet-20240620-v1:0"
    assert model_info(model).family == "anthropic"
    assert model_info(model).context_window == 200_000


@pytest.mark.parametrize(("model", "window"), [
    ("gpt-5.2-chat-latest", 128_000),  # the chat-latest snapshots: it had gpt-5's 400,000
    ("gpt-5.1-chat-latest", 128_000), ("gpt-5.2", 400_000), ("gpt-5.4-chat-latest", 128_000),
    ("o1-mini", 128_000), ("o1-mini-2024-09-12", 128_000), ("o1-preview", 128_000),  # 200,000
    ("o1", 200_000), ("o1-2024-12-17", 200_000),
    ("grok-3", 131_072), ("grok-3-mini", 131_072), ("xai/grok-3-latest", 131_072),  # 256,000
    ("grok-4", 256_000),
])
def test_windows_of_the_snapshots_the_family_row_took(model, window):
    assert model_info(model).context_window == window
    assert model_info(model).default_budget < window
