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
