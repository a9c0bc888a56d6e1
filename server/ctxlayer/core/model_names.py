"""A model's name as the tables key it (the model table, Anthropic's tool-use prompt sizes),
however a provider spells it: `openai/gpt-4o` (OpenRouter, LiteLLM), Bedrock's
`us.anthropic.claude-3-5-haiku-20241022-v1:0` (an inference profile's region before it, or an
ARN ending in one), OpenRouter's `anthropic/claude-3.5-haiku` (a dot in a Claude 3 version),
Azure's `gpt-35-turbo` (a dot is not allowed in its names), a fine-tuned model's
`ft:gpt-4o-mini-2024-07-18:org::id` (counted and sized as its base model, as tiktoken does).
"""

from __future__ import annotations

import re

#: how Amazon Bedrock names Claude: `anthropic.claude-...`, with a region's inference profile
#: before it (`us.`, `eu.`, `apac.`, `global.`, GovCloud's `us-gov.`)
_BEDROCK = re.compile(r"^(?:[a-z]{2,6}(?:-[a-z]{2,6})?\.)?anthropic\.")
#: OpenRouter's `claude-3.5-haiku` for Anthropic's `claude-3-5-haiku` (only the names before
#: Claude 4 put the version first; `gpt-4.1`'s dot is its own)
_DOTTED_CLAUDE = re.compile(r"^claude-(\d)\.(\d)-")
#: OpenAI's fine-tuned models, `ft:<base model>:<organization>:<suffix>:<id>`
_FINE_TUNED = re.compile(r"^ft:([^:]+):.*")
#: Azure OpenAI's `gpt-35-turbo` for `gpt-3.5-turbo`
_AZURE_35 = re.compile(r"^gpt-35-")


def bare_name(model: str) -> str:
    """The name in lower case without a provider's `vendor/` prefix, as a user reads it."""
    return model.strip().lower().rsplit("/", 1)[-1]


def model_key(model: str) -> str:
    """The name the tables are keyed by: `bare_name` without Bedrock's `anthropic.` and its
    region, a Claude 3 version with a dash, a fine-tuned model's base, GPT-3.5 as OpenAI
    spells it."""
    name = _FINE_TUNED.sub(r"\1", _BEDROCK.sub("", bare_name(model)))
    return _AZURE_35.sub("gpt-3.5-", _DOTTED_CLAUDE.sub(r"claude-\1-\2-", name))


def is_claude(model: object) -> bool:
    """Whether a model name names a Claude model, however the provider spells it."""
    return isinstance(model, str) and model_key(model).startswith("claude")

