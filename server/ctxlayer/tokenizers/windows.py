"""A model's context window for one request: the table's (1M where the model has it from the
start, `long_windows.py`), the 1M window the request asked for with an
`anthropic-beta: context-1m-*` header where the model has one, or the window the user set in
`[gateway.models]` (which wins).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ctxlayer.core.model_names import bare_name, model_key
from ctxlayer.tokenizers.long_windows import (
    LONG_CONTEXT,
    LONG_WINDOW,
    has_long_window,
    wants_long_window,
)
from ctxlayer.tokenizers.models import model_info

__all__ = ["LONG_CONTEXT", "LONG_WINDOW", "context_window", "user_window"]


def context_window(model: str | None, betas: Iterable[str] = (),
                   overrides: Mapping[str, int] | None = None) -> int:
    """The window a request to ``model`` gets: the user's (`user_window`), else 1M when
    ``betas`` ask for it and the model has it, else the table's."""
    named = user_window(model, overrides)
    if named is not None:
        return named
    bare = (model or "").strip().lower().rsplit("/", 1)[-1]
    if model and wants_long_window(betas) and has_long_window(bare):
        return LONG_WINDOW
    return model_info(model).context_window


def user_window(model: str | None, overrides: Mapping[str, int] | None) -> int | None:
    """The window the user set for ``model`` in ``overrides`` (`[gateway] models`): the
    longest key that starts the name as the client sent it (`anthropic/claude-sonnet-4.5`), or
    a key without a provider's prefix that starts the bare name (`claude-sonnet-4.5`), Bedrock's
    too (`model_names.model_key`); None
    when no key names it."""
    if not overrides:
        return None
    name = (model or "").strip().lower()
    # Bedrock's `us.anthropic.claude-haiku-4-5-...-v1:0` too: the key `claude-haiku-4-5` was
    # applied to every other spelling of that model but this one
    bare = (bare_name(name), model_key(name))
    # OpenRouter's dotted `claude-haiku-4.5` for Anthropic's `claude-haiku-4-5`, either way
    bare += tuple(_undotted(b) for b in bare)
    keys = [k for k in overrides if name.startswith(k.strip().lower()) or
            ("/" not in k and any(b.startswith(_undotted(k.strip().lower())) for b in bare))]
    return overrides[max(keys, key=len)] if keys else None


def _undotted(name: str) -> str:
    """A Claude name with its version's dots as dashes (a Claude name has no other dot once
    Bedrock's prefix is gone); any other name as it is (`gpt-4.1` is not `gpt-4-1...`)."""
    return name.replace(".", "-") if name.startswith("claude") else name
