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
from ctxlayer.tokenizers import model_info


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
    # OpenAI refuses `max_tokens` for its reasoning models ("Unsupported parameter: use
    # 'max_completion_tokens'"); other servers of the format may not know the newer name
    cap = ({"max_completion_tokens": max_tokens} if model_info(model).reasoning_model
           else {"max_tokens": max_tokens})
    return {"model": model, **cap, "stream": False,
            "messages": [{"role": "system", "content": instructions},
                         {"role": "user", "content": text}]}


def _texts(blocks: object, kind: str) -> str:
    """The text of the ``kind`` blocks of a list of content blocks (the others, such as a
    model's thinking, are not the answer); TypeError when it is no list or a text no string."""
    if not isinstance(blocks, list):
        raise TypeError(f"the content is a {type(blocks).__name__}, not a list of blocks")
    texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == kind]
    if not all(isinstance(t, str) for t in texts):
        raise TypeError(f"a {kind!r} block holds no string")
    return "".join(texts)


def _chat_text(body: dict) -> str:
    content = body["choices"][0]["message"]["content"]
    if content is None or isinstance(content, str):
        return content or ""
    # a list of parts is a valid answer too (Mistral's Magistral answers its thinking and its
    # text as parts): its text parts are the answer; a number or an object is no text
    return _texts(content, "text")


def _messages_summary(model: str, instructions: str, text: str, max_tokens: int) -> dict:
    return {"model": model, "max_tokens": max_tokens, "system": instructions,
            "messages": [{"role": "user", "content": text}]}


def _messages_text(body: dict) -> str:
    return _texts(body["content"], "text")


def _responses_summary(model: str, instructions: str, text: str, max_tokens: int) -> dict:
    return {"model": model, "instructions": instructions, "input": text,
            "max_output_tokens": max_tokens, "store": False}


def _responses_text(body: dict) -> str:
    output = body["output"]
    if not isinstance(output, list):
        raise TypeError(f"the output is a {type(output).__name__}, not a list of items")
    return "".join(_texts(item["content"], "output_text") for item in output
                   if isinstance(item, dict) and item.get("type") == "message")


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
    #: summary of ``text`` in at most ``max_tokens`` of output, a reasoning model's thinking
    #: counted in (`[gateway] summarizer = "upstream"`, upsum.py)
    summary_request: Callable[[str, str, str, int], dict]
    #: the text of a whole (non-streamed) answer in this format: that request's summary, or
    #: any answer's first words (answers.py) (KeyError / TypeError when it has none, or
    #: something that is no text where the text goes)
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
