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
    #: the `[gateway]` setting that says where the upstream is
    setting: str
    #: what the setting's URL needs after it to be the upstream's `/v1` base
    to_v1: str
    #: a model of the family: the gateway builds its encoding when it starts, so the first
    #: request does not wait for the build (half a second of a cold start's first request)
    model: str

    def base(self, config: GatewayConfig) -> str:
        """The upstream's URL as the config says it."""
        return getattr(config, self.setting)

    def v1(self, config: GatewayConfig) -> str:
        """The upstream's `/v1` base URL."""
        return self.base(config).rstrip("/") + self.to_v1


OPENAI = Family("openai", "openai_base_url", "", "gpt-4o")  # the setting names its /v1
ANTHROPIC = Family("anthropic", "anthropic_base_url", "/v1", "claude")


def _chat_summary(model: str, instructions: str, text: str, max_tokens: int) -> dict:
    return {"model": model, "max_tokens": max_tokens, "stream": False,
            "messages": [{"role": "system", "content": instructions},
                         {"role": "user", "content": text}]}


def _chat_text(body: dict) -> str:
    return body["choices"][0]["message"]["content"] or ""


def _messages_summary(model: str, instructions: str, text: str, max_tokens: int) -> dict:
    return {"model": model, "max_tokens": max_tokens, "system": instructions,
            "messages": [{"role": "user", "content": text}]}


def _messages_text(body: dict) -> str:
    return "".join(b["text"] for b in body["content"] if b.get("type") == "text")


def _responses_summary(model: str, instructions: str, text: str, max_tokens: int) -> dict:
    return {"model": model, "instructions": instructions, "input": text,
            "max_output_tokens": max_tokens, "store": False}


def _responses_text(body: dict) -> str:
    return "".join(c["text"] for item in body["output"] if item.get("type") == "message"
                   for c in item["content"] if c.get("type") == "output_text")


@dataclass(frozen=True, slots=True)
class Provider:
    """One model API: the request format (codec, usage shape), who serves it, and where."""

    fmt: str
    family: Family
    #: the path the gateway serves (POST)
    route: str
    #: the path under the upstream's `/v1` base
    upstream: str
    #: (model, instructions, text, max_tokens) -> a plain, non-streamed request asking for a
    #: summary of ``text`` (`[gateway] summarizer = "upstream"`, upsum.py)
    summary_request: Callable[[str, str, str, int], dict]
    #: the text of a whole (non-streamed) answer in this format: that request's summary, or
    #: any answer's first words (answers.py) (KeyError / TypeError when it has none)
    answer_text: Callable[[dict], str]

    def url(self, config: GatewayConfig) -> str:
        return f"{self.family.v1(config)}/{self.upstream}"


PROVIDERS: tuple[Provider, ...] = (
    Provider("openai", OPENAI, "/v1/chat/completions", "chat/completions", _chat_summary,
             _chat_text),
    Provider("anthropic", ANTHROPIC, "/v1/messages", "messages", _messages_summary,
             _messages_text),
    Provider("responses", OPENAI, "/v1/responses", "responses", _responses_summary,
             _responses_text),
)
BY_FORMAT: dict[str, Provider] = {p.fmt: p for p in PROVIDERS}


def family_of(headers: Mapping[str, str]) -> Family:
    """The family a request that is not a model request is for: Anthropic's SDKs and tools
    always send `anthropic-version`; everything else is OpenAI's."""
    return ANTHROPIC if "anthropic-version" in headers else OPENAI
