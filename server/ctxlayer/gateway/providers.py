"""The providers the gateway speaks for, as data: one `Provider` per model route (its format's
codec and usage shape, its family's upstream and error shape, the route it serves), registered
in one table, and the two families whose upstreams every other `/v1` path is forwarded to.

The gateway's routes are made from `PROVIDERS` and look a provider up; they never branch on
a provider's name. Adding a provider API is adding a codec in `core/formats`, a usage shape in
`usage.py` and one row here. The pure parts (decode, encode, where a request keeps its
conversation and output room, conversation hints) are the codec's (`core.formats.CODECS`).
Must not do I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ctxlayer.config import GatewayConfig


@dataclass(frozen=True, slots=True)
class Family:
    """Who serves a provider's requests: the upstream's `/v1` base and the error shape
    (`errors.error_body` takes the family's name)."""

    name: str
    #: the upstream's `/v1` base URL from the gateway's config
    v1: Callable[[GatewayConfig], str]


OPENAI = Family("openai", lambda c: c.openai_base_url.rstrip("/"))  # configured with its /v1
ANTHROPIC = Family("anthropic", lambda c: c.anthropic_base_url.rstrip("/") + "/v1")


@dataclass(frozen=True, slots=True)
class Provider:
    """One model API: the request format (codec, usage shape), who serves it, and where."""

    fmt: str
    family: Family
    #: the path the gateway serves (POST)
    route: str
    #: the path under the upstream's `/v1` base
    upstream: str

    def url(self, config: GatewayConfig) -> str:
        return f"{self.family.v1(config)}/{self.upstream}"


PROVIDERS: tuple[Provider, ...] = (
    Provider("openai", OPENAI, "/v1/chat/completions", "chat/completions"),
    Provider("anthropic", ANTHROPIC, "/v1/messages", "messages"),
    Provider("responses", OPENAI, "/v1/responses", "responses"),
)


def family_of(headers: Mapping[str, str]) -> Family:
    """The family a request that is not a model request is for: Anthropic's SDKs and tools
    always send `anthropic-version`; everything else is OpenAI's."""
    return ANTHROPIC if "anthropic-version" in headers else OPENAI
