"""The model table: which encoding counts a model's tokens, its window, its usual output
allowance, and how far our count may be from the provider's.

OpenAI models are counted exactly with their own encoding. Other families have tokenizers we
cannot ship offline; they are counted with the nearest encoding times a family correction, and
`uncertainty` records how far off that may be (a relative half-width, shown to users as an error
band until usage reports calibrate it). The corrections are conservative (they over-count), as
gptme's soft limits are: a budget overshoot costs a failed request, an undershoot only slack.
"""

from __future__ import annotations

import msgspec

from ctxlayer.core.model_names import bare_name, model_key
from ctxlayer.tokenizers.long_windows import LONG_WINDOW, has_native_long_window


class ModelInfo(msgspec.Struct, frozen=True):
    name: str
    family: str
    encoding: str
    context_window: int
    output_allowance: int
    correction: float = 1.0  # multiply the encoding's count by this
    uncertainty: float = 0.0  # relative half-width of the error band (0.1 = ±10%)
    native_reasoning: bool = False
    reasoning_model: bool = False
    enforce_tool_use: bool = False
    exact: bool = True  # counted with the provider's own encoding

    @property
    def default_budget(self) -> int:
        """Tokens the prompt may use when the client names no budget."""
        return max(1, self.context_window - self.output_allowance)


def _m(prefix: str, family: str, encoding: str, window: int, output: int, **kw) -> ModelInfo:
    return ModelInfo(prefix, family, encoding, window, output, **kw)


O2, CL = "o200k_base", "cl100k_base"

# Longest matching prefix wins. Windows and output allowances as the providers publish them.
TABLE: tuple[ModelInfo, ...] = (
    _m("gpt-5", "openai", O2, 400_000, 128_000, native_reasoning=True, reasoning_model=True,
       enforce_tool_use=True),
    # GPT-5.4 on: 1,050,000 (5.4's mini and nano keep 400k; 5.6's Terra and Luna have it
    # too); the chat-latest snapshots 128k
    *(_m(name, "openai", O2, window, 128_000, native_reasoning=True, reasoning_model=True,
         enforce_tool_use=True) for name, window in (
        ("gpt-5.4", 1_050_000), ("gpt-5.4-mini", 400_000), ("gpt-5.4-nano", 400_000),
        ("gpt-5.5", 1_050_000), ("gpt-5.6", 1_050_000))),
    *(_m(name, "openai", O2, 128_000, 16_384, enforce_tool_use=True)
      for name in ("gpt-5-chat", "gpt-5.1-chat", "gpt-5.2-chat", "gpt-5.3-chat",
                   "gpt-5.4-chat", "gpt-5.5-chat", "gpt-5.6-chat")),
    # GPT-6 (Astra, Sol, Luna; 6.2 Astra and Sol, Codex 0.171's default model): 1,050,000, of
    # which 922,000 input, and 128,000 out (https://developers.openai.com/api/docs/models/
    # gpt-6.2-sol; the models page lists the others alike). No encoding is published: o200k,
    # as for GPT-5. Without it gpt-6.2-sol took the unknown row's 128k and a 1.15 correction
    _m("gpt-6", "openai", O2, 1_050_000, 128_000, native_reasoning=True, reasoning_model=True,
       enforce_tool_use=True),
    _m("gpt-4.1", "openai", O2, 1_047_576, 32_768, enforce_tool_use=True),
    # GPT-4.5 Preview: 128,000 and 16,384 (litellm's table, as
    # https://futureagi.com/llm-cost-calculator/openai/gpt-4-5-preview gives it; OpenAI's page
    # is gone with the model); o200k, as tiktoken maps `gpt-4.5-`
    _m("gpt-4.5", "openai", O2, 128_000, 16_384, enforce_tool_use=True),
    _m("gpt-4o", "openai", O2, 128_000, 16_384, enforce_tool_use=True),
    # ChatGPT's GPT-4o: 128,000 and 16,384, as OpenAI's model page says it (quoted in
    # https://rageagainstthepixel.github.io/OpenAI-DotNet/api/OpenAI.Models.Model.html)
    _m("chatgpt-4o", "openai", O2, 128_000, 16_384, enforce_tool_use=True),
    # GPT-4 Turbo under every name it had: 128,000 and 4,096
    # (https://developers.openai.com/api/docs/models/gpt-4-turbo lists the 1106 and vision
    # previews as its snapshots; .../gpt-4-turbo-preview has gpt-4-0125-preview). Without
    # these rows the `gpt-4` row's 8,192 took them.
    *(_m(name, "openai", CL, 128_000, 4_096, enforce_tool_use=True)
      for name in ("gpt-4-turbo", "gpt-4-1106", "gpt-4-0125", "gpt-4-vision")),
    _m("gpt-4-32k", "openai", CL, 32_768, 4_096, enforce_tool_use=True),
    _m("gpt-4", "openai", CL, 8_192, 4_096, enforce_tool_use=True),
    _m("gpt-3.5-turbo", "openai", CL, 16_385, 4_096, enforce_tool_use=True),
    _m("o1", "openai", O2, 200_000, 100_000, native_reasoning=True, reasoning_model=True),
    # the previews o1 came after: 128,000, with 65,536 and 32,768 of output
    _m("o1-mini", "openai", O2, 128_000, 65_536, native_reasoning=True, reasoning_model=True),
    _m("o1-preview", "openai", O2, 128_000, 32_768, native_reasoning=True,
       reasoning_model=True),
    _m("o3", "openai", O2, 200_000, 100_000, native_reasoning=True, reasoning_model=True),
    _m("o4", "openai", O2, 200_000, 100_000, native_reasoning=True, reasoning_model=True),
    # o4-mini fine-tuned for the Codex CLI: 200,000 and 100,000
    # (https://developers.openai.com/api/docs/models/codex-mini-latest)
    _m("codex-mini", "openai", O2, 200_000, 100_000, native_reasoning=True,
       reasoning_model=True),
    # The open-weight reasoning models: 131,072, output up to all of it
    # (https://developers.openai.com/api/docs/models/gpt-oss-120b, .../gpt-oss-20b), so the
    # usual allowance is 32,768, as Vercel's gateway caps it
    # (https://vercel.com/ai-gateway/models/gpt-oss-20b.md). Their encoding, o200k_harmony, is
    # o200k_base's ranks with more special tokens (tiktoken_ext/openai_public.py): o200k_base
    # counts their text the same. Matches `gpt-oss:20b` (Ollama) and `openai/gpt-oss-120b`.
    _m("gpt-oss", "openai", O2, 131_072, 32_768, native_reasoning=True, reasoning_model=True),
    # Claude's tokenizer yields more tokens than cl100k on code and prose alike. Its window
    # is 1M for the models long_windows.py names.
    _m("claude", "anthropic", CL, 200_000, 16_000, correction=1.2, uncertainty=0.1,
       native_reasoning=True, exact=False),
    _m("gemini", "google", O2, 1_048_576, 65_536, correction=1.1, uncertainty=0.15,
       native_reasoning=True, enforce_tool_use=True, exact=False),
    _m("grok", "xai", O2, 256_000, 16_384, correction=1.1, uncertainty=0.15,
       enforce_tool_use=True, exact=False),
    # Grok 3 (and its mini): 131,072; the 256k is Grok 4's
    _m("grok-3", "xai", O2, 131_072, 16_384, correction=1.1, uncertainty=0.15,
       enforce_tool_use=True, exact=False),
    # Llama 3 extends a cl100k-like BPE: counts land within a few percent of cl100k.
    _m("llama", "meta", CL, 128_000, 4_096, correction=1.05, uncertainty=0.05, exact=False),
    _m("qwen", "alibaba", CL, 131_072, 8_192, correction=1.1, uncertainty=0.1, exact=False),
    # Qwen Code's model on Alibaba's API (a local server's Qwen states its own, learned.py)
    _m("qwen3-coder-plus", "alibaba", CL, 1_000_000, 65_536, correction=1.1, uncertainty=0.1,
       exact=False),
    _m("mistral", "mistral", O2, 128_000, 8_192, correction=1.15, uncertainty=0.15,
       exact=False),
    _m("codestral", "mistral", O2, 256_000, 8_192, correction=1.15, uncertainty=0.15,
       exact=False),
    _m("deepseek", "deepseek", CL, 128_000, 8_192, correction=1.1, uncertainty=0.1,
       exact=False),
)

DEFAULT_MODEL = "gpt-4o"
_UNKNOWN = ModelInfo("unknown", "unknown", O2, 128_000, 8_192, correction=1.15,
                     uncertainty=0.2, exact=False)


def model_info(model: str | None) -> ModelInfo:
    """The table row for a model name (provider prefixes such as `openai/` and Bedrock's
    `us.anthropic.` are ignored: core/model_names.py)."""
    name = model or DEFAULT_MODEL
    bare, key = bare_name(name), model_key(name)
    best: ModelInfo | None = None
    for row in TABLE:
        if key.startswith(row.name) and (best is None or len(row.name) > len(best.name)):
            best = row
    if best is None:
        return msgspec.structs.replace(_UNKNOWN, name=bare or "unknown")
    if best.family == "anthropic" and has_native_long_window(key):
        # the one `claude` row holds 200k; Opus and Sonnet 4.6 on (and the models since)
        # have 1M with no beta asked
        return msgspec.structs.replace(best, name=bare, context_window=LONG_WINDOW)
    return msgspec.structs.replace(best, name=bare)
