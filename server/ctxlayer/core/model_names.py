"""A model's name as the tables key it (the model table, Anthropic's tool-use prompt sizes),
however a provider spells it: `openai/gpt-4o` (OpenRouter, LiteLLM), Bedrock's
`us.anthropic.claude-3-5-haiku-20241022-v1:0` (an inference profile's region before it, or an
ARN ending in one), OpenRouter's `anthropic/claude-3.5-haiku` (a dot in a Claude 3 version).
"""

from __future__ import annotations

import re

#: how Amazon Bedrock names Claude: `anthropic.claude-...`, with a region's inference profile
#: before it (`us.`, `eu.`, `apac.`, `global.`)
_BEDROCK = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic\.")
#: OpenRouter's `claude-3.5-haiku` for Anthropic's `claude-3-5-haiku` (only the names before
#: Claude 4 put the version first; `gpt-4.1`'s dot is its own)
_DOTTED_CLAUDE = re.compile(r"^claude-(\d)\.(\d)-")


def bare_name(model: str) -> str:
    """The name in lower case without a provider's `vendor/` prefix, as a user reads it."""
    return model.strip().lower().rsplit("/", 1)[-1]


def model_key(model: str) -> str:
    """The name the tables are keyed by: `bare_name` without Bedrock's `anthropic.` and its
    region, a Claude 3 version with a dash."""
    return _DOTTED_CLAUDE.sub(r"claude-\1-\2-", _BEDROCK.sub("", bare_name(model)))


def is_claude(model: object) -> bool:
    """Whether a model name names a Claude model, however the provider spells it."""
    return isinstance(model, str) and model_key(model).startswith("claude")


#: Claude's families and versions: `claude-opus-4-7`, `claude-sonnet-5-5-20261101`, and
#: OpenRouter's `claude-opus-4.7`
_CLAUDE_VERSION = re.compile(r"^claude-(opus|sonnet|haiku)-(\d+)(?:[-.](\d))?(?!\d)")
#: the first version of each family that sees images at the larger native resolution
#: (Opus 4.7 and later, Sonnet 5 and later, Haiku 5.5 and later), and the names of the
#: models of that tier that carry no family (Fable, Mythos)
_HIGH_RESOLUTION = {"opus": (4, 7), "sonnet": (5, 0), "haiku": (5, 5)}
_HIGH_RESOLUTION_NAMES = ("fable", "mythos")


def sees_large_images(model: object) -> bool:
    """Whether a Claude model takes images up to 2,576 px on the long edge (4,784 visual
    tokens) before it resizes them, where earlier ones stop at 1,568 px (about 1,600)."""
    if not is_claude(model):
        return False
    key = model_key(model)  # type: ignore[arg-type]
    if any(name in key for name in _HIGH_RESOLUTION_NAMES):
        return True
    found = _CLAUDE_VERSION.match(key)
    if found is None:
        return False
    family, major, minor = found.group(1), int(found.group(2)), int(found.group(3) or 0)
    return (major, minor) >= _HIGH_RESOLUTION[family]
