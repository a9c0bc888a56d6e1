"""A model's context window for one request: the table's, the 1M window the request asked
for with an `anthropic-beta: context-1m-*` header where the model has one, or the window the
user set in `[gateway.models]` (which wins).

The models with a 1M window (as Anthropic publishes them) are stated once, in LONG_CONTEXT:
a family and the first version that has it. Names are read as Anthropic writes them
(`claude-sonnet-4-5-20250929`, `claude-opus-4-6`, `us.anthropic.claude-sonnet-4-...`);
the legacy form `claude-3-5-sonnet-...` has no 1M window.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ctxlayer.core.formats.anthropic_thinking import claude_version
from ctxlayer.tokenizers.models import model_info

#: the window a `context-1m-*` beta opens
LONG_WINDOW = 1_000_000
#: the beta names that ask for it (`context-1m-2025-08-07`, and any later date)
LONG_BETA = "context-1m-"

#: (family, first (major, minor) with a 1M window): Sonnet 4 and every Sonnet since; Opus from
#: 4.6 on. Haiku has none.
LONG_CONTEXT: tuple[tuple[str, tuple[int, int]], ...] = (
    ("sonnet", (4, 0)),
    ("opus", (4, 6)),
)

def has_long_window(model: str) -> bool:
    """Whether the model opens a 1M window when a request asks for it."""
    version = claude_version(model)
    return version is not None and any(
        version[0] == family and version[1] >= since for family, since in LONG_CONTEXT)


def wants_long_window(betas: Iterable[str]) -> bool:
    return any(b.strip().lower().startswith(LONG_BETA) for b in betas)


def context_window(model: str | None, betas: Iterable[str] = (),
                   overrides: Mapping[str, int] | None = None) -> int:
    """The window a request to ``model`` gets: an override (the longest key that starts the
    name as the client sent it, `anthropic/claude-sonnet-4.5`, or a key without a provider's
    prefix that starts the bare name, `claude-sonnet-4.5`), else 1M when ``betas`` ask for it
    and the model has it, else the table's."""
    name = (model or "").strip().lower()
    bare = name.rsplit("/", 1)[-1]
    if overrides:
        keys = [k for k in overrides if name.startswith(k.strip().lower()) or
                ("/" not in k and bare.startswith(k.strip().lower()))]
        if keys:
            return overrides[max(keys, key=len)]
    if model and wants_long_window(betas) and has_long_window(bare):
        return LONG_WINDOW
    return model_info(model).context_window
