"""Which Claude models have a 1M window: from the start (as Anthropic's model pages give it:
Opus and Sonnet from 4.6 on, Haiku 5.5, every Fable), or when a request asks for it with an
`anthropic-beta: context-1m-*` header (Sonnet 4 and 4.5, whose own window is 200k).

The model table has one `claude` row; this is what that row cannot say, read from the model's
name however the provider spells it (`claude-opus-5-5`, `claude-sonnet-4-5-20250929`, Bedrock's
`us.anthropic.claude-...`, OpenRouter's `claude-opus-4.6`). The legacy form
`claude-3-5-sonnet-...` has no 1M window.
"""

from __future__ import annotations

from collections.abc import Iterable

from ctxlayer.core.formats.anthropic_thinking import claude_version, from_version

#: the window of those models
LONG_WINDOW = 1_000_000
#: the beta names that ask for it (`context-1m-2025-08-07`, and any later date)
LONG_BETA = "context-1m-"

#: (family, first (major, minor)) whose window is 1M with no beta asked
NATIVE_LONG: tuple[tuple[str, tuple[int, int]], ...] = (
    ("opus", (4, 6)),
    ("sonnet", (4, 6)),
    ("haiku", (5, 5)),
    ("fable", (0, 0)),
)

#: (family, first (major, minor)) that a `context-1m-*` beta opens 1M on: Sonnet 4 and every
#: Sonnet since, Opus from 4.6 on (where it changes nothing now). Haiku 4.5 has none.
LONG_CONTEXT: tuple[tuple[str, tuple[int, int]], ...] = (
    ("sonnet", (4, 0)),
    ("opus", (4, 6)),
)


def has_native_long_window(model: str) -> bool:
    """Whether the model's own window is 1M."""
    return from_version(claude_version(model), NATIVE_LONG)


def has_long_window(model: str) -> bool:
    """Whether the model opens a 1M window when a request asks for it."""
    version = claude_version(model)
    return from_version(version, NATIVE_LONG) or from_version(version, LONG_CONTEXT)


def wants_long_window(betas: Iterable[str]) -> bool:
    return any(b.strip().lower().startswith(LONG_BETA) for b in betas)
