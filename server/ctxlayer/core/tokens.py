"""Token accounting: the Tokenizer protocol, a bounded content-keyed count cache, and the
per-message overheads providers add.

The core never loads a real tokenizer; one is injected (tests use a fake that counts words).
Counts are cached by content: the key is the text itself, so a warm re-count of a conversation
whose strings are the same objects costs a dict probe per message (CPython caches a str's hash
and compares identical objects by identity).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, runtime_checkable

import msgspec

from ctxlayer.core.model_names import is_claude, model_key
from ctxlayer.protocol import Message


@runtime_checkable
class Tokenizer(Protocol):
    """Anything that counts the tokens of a text."""

    name: str

    def count(self, text: str) -> int: ...


class MessageFormat(msgspec.Struct, frozen=True):
    """What a provider adds around each message, in tokens.

    OpenAI's chat format: 4 per message (3 of separators and the role, one token for every role
    OpenAI has), 3 to prime the reply; a tool call costs its name and arguments plus a few
    framing tokens. The counts of OpenAI's cookbook ("How to count tokens with tiktoken"),
    which match the API's prompt_tokens; a message's `name` costs its tokens and one more.
    """

    per_message: int = 4
    per_tool_call: int = 4
    reply_priming: int = 3


OPENAI_FORMAT = MessageFormat()
#: gptme counts content only; used where a caller wants raw content counts.
CONTENT_ONLY = MessageFormat(per_message=0, per_tool_call=0, reply_priming=0)


def correction_of(counter: Tokenizer) -> float:
    """The factor a counter multiplies its encoding's counts by (a model family's correction;
    1.0 without one): an estimate made in the encoding's tokens without the encoding (what an
    encrypted block holds, from its size) is multiplied by it too, to be in the counter's units."""
    correction = getattr(counter, "correction", 1.0)
    return float(correction) if isinstance(correction, int | float) else 1.0


class CountCache:
    """Counts texts with a tokenizer, remembering results in a bounded LRU keyed by content.

    The bound is on total characters held, so a few huge texts cannot pin gigabytes; the
    strings held are usually the conversation's own, so the cache adds little memory.
    """

    __slots__ = ("tokenizer", "max_chars", "_counts", "_chars", "hits", "misses")

    def __init__(self, tokenizer: Tokenizer, max_chars: int = 64_000_000) -> None:
        self.tokenizer = tokenizer
        self.max_chars = max_chars
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._chars = 0
        self.hits = 0
        self.misses = 0

    @property
    def name(self) -> str:
        return self.tokenizer.name

    @property
    def correction(self) -> float:
        return correction_of(self.tokenizer)

    def count(self, text: str) -> int:
        if not text:
            return 0
        counts = self._counts
        n = counts.get(text)
        if n is not None:
            counts.move_to_end(text)
            self.hits += 1
            return n
        self.misses += 1
        n = self.tokenizer.count(text)
        counts[text] = n
        self._chars += len(text)
        self._evict()
        return n

    def count_many(self, texts: list[str]) -> list[int]:
        """Counts of many texts; the uncached ones are encoded in one batch when the
        tokenizer offers `count_batch` (the tiktoken counter spreads it over two threads)."""
        out, missing = self.known(texts)
        if not missing:
            return out  # type: ignore[return-value]
        return self.remember(texts, out, missing, encode_many(self.tokenizer, missing))

    def known(self, texts: list[str]) -> tuple[list[int | None], list[str]]:
        """The cached counts of ``texts`` (None where not cached) and the distinct texts that
        are not: the first half of `count_many`, for a caller that encodes them elsewhere."""
        counts = self._counts
        out = [counts.get(t) if t else 0 for t in texts]
        missing = list(dict.fromkeys(t for t, n in zip(texts, out, strict=True) if n is None))
        self.hits += len(texts) - len(missing)
        return out, missing

    def remember(self, texts: list[str], out: list[int | None], missing: list[str],
                 fresh: list[int]) -> list[int]:
        """Keep the counts ``fresh`` of ``missing`` and return every count of ``texts``."""
        counts = self._counts
        new = dict(zip(missing, fresh, strict=True))
        for text, n in new.items():
            if text not in counts:  # another thread may have counted it meanwhile
                self._chars += len(text)
            counts[text] = n
        self.misses += len(missing)
        self._evict()
        return [new[t] if n is None else n for t, n in zip(texts, out, strict=True)]

    def _evict(self) -> None:
        counts = self._counts
        while self._chars > self.max_chars and len(counts) > 1:
            old, _ = counts.popitem(last=False)
            self._chars -= len(old)

    def __len__(self) -> int:
        return len(self._counts)


#: characters below which texts are counted one by one: a batch starts its threads each time,
#: which costs more than it saves on a turn's few new messages (a millisecond a turn)
BATCH_MIN_CHARS = 256 * 1024


def encode_many(tokenizer: Tokenizer, texts: list[str],
                helped: Callable[[], bool] | None = None) -> list[int]:
    """Counts of ``texts`` by a tokenizer itself: one batch where it offers `count_batch` and
    the texts are long enough to pay for its threads (``helped``: while a helper thread may
    count beside this one; always when None)."""
    batch = getattr(tokenizer, "count_batch", None)
    if batch is not None and len(texts) > 1 and sum(map(len, texts)) >= BATCH_MIN_CHARS:
        return batch(texts) if helped is None else batch(texts, helped)
    return [tokenizer.count(t) for t in texts]


def messages_tokens(msgs: Sequence[Message], counter: Tokenizer,
                    fmt: MessageFormat = OPENAI_FORMAT) -> list[int]:
    """`message_tokens` of each message, their texts counted in one batch where the counter
    offers `count_many` (a count cache: the CLI, the benches; 10-20% less time on a 5 MB
    first request than one text at a time)."""
    many = getattr(counter, "count_many", None)
    if many is not None and len(msgs) > 1:  # counted (and kept) at once, then read back
        many([t for m in msgs
              for t in (m.content, *(x for c in m.tool_calls or () for x in (c.name, c.arguments)))])
    return [message_tokens(m, counter, fmt) for m in msgs]


def message_tokens(msg: Message, counter: Tokenizer, fmt: MessageFormat = OPENAI_FORMAT) -> int:
    """Tokens one message costs in a request, overheads included."""
    n = fmt.per_message + counter.count(msg.content) + (msg.parts_tokens or 0)
    if msg.tool_calls:
        for call in msg.tool_calls:
            n += fmt.per_tool_call + counter.count(call.name) + counter.count(call.arguments)
    return n


#: Anthropic adds a system prompt to every request that carries tools, its size set by the model
#: and by tool_choice (auto and none, else any and tool): the "tool use system prompt token
#: count" table of Anthropic's tool-use pricing page. Current models share the first entry; the
#: Claude 3 ones differ, found by their name's start.
ANTHROPIC_TOOL_PROMPT: dict[str, tuple[int, int]] = {
    "": (346, 313),
    "claude-3-opus": (530, 281),
    "claude-3-sonnet": (159, 235),
    "claude-3-haiku": (264, 340),
    "claude-3-5-haiku": (264, 340),
}


def anthropic_tool_prompt(model: str, choice: object) -> int:
    """The tokens of Anthropic's tool-use system prompt for `model` (as Bedrock, OpenRouter or
    Anthropic names it: model_names.py) and `tool_choice`."""
    name = model_key(model) if isinstance(model, str) else ""
    auto, forced = max(((k, v) for k, v in ANTHROPIC_TOOL_PROMPT.items() if name.startswith(k)),
                       key=lambda kv: len(kv[0]))[1]
    kind = choice.get("type") if isinstance(choice, dict) else None
    return forced if kind in ("any", "tool") else auto


def loaded(tools: object) -> list:
    """The tool definitions the provider puts in the prompt: not those with `defer_loading`
    (tool search, in both APIs), which cost what a reference to them loads, where it does."""
    if not isinstance(tools, list):
        return []
    return [t for t in tools if not (isinstance(t, dict) and t.get("defer_loading") is True)]


def deferred_tools(tools: object, counter: Tokenizer) -> dict[str, int]:
    """{name: the tokens of its definition} of the tools loaded only by a reference."""
    if not isinstance(tools, list):
        return {}
    return {t["name"]: counter.count(msgspec.json.encode(t).decode()) for t in tools
            if isinstance(t, dict) and t.get("defer_loading") is True
            and isinstance(t.get("name"), str)}


def tools_tokens(request: dict, counter: Tokenizer, fmt: str, model: str | None = None) -> int:
    """Tokens a request's tools cost as the provider bills them: the definitions (as their
    JSON; not those deferred to a tool search, `loaded`), and tool_choice. OpenAI bills a
    named choice (`{"type": "function", ...}`) as more prompt, counted here as its JSON; a
    plain "auto", "none" or "required" adds nothing. Anthropic instead adds its tool-use
    system prompt, whose size depends on the choice and on the model (`model`, when named
    outside the request, else the request's: `Decoded.model`). A Claude model asked in
    Chat Completions' or the Responses API's shape (OpenRouter, LiteLLM, Anthropic's
    compatible endpoint) is Claude reading the request translated: its tool-use prompt is
    added there too."""
    tools, choice = request.get("tools"), request.get("tool_choice")
    model = model or request.get("model", "")
    shown = loaded(tools)
    n = counter.count(msgspec.json.encode(shown).decode()) if shown else 0
    if fmt == "anthropic":
        return n + anthropic_tool_prompt(model, choice) if tools else n
    # (ctxlayer's format: Chat Completions' tools, as a body with plain messages is read)
    if fmt in ("openai", "ctxlayer", "responses") and is_claude(model) and (
            tools or request.get("functions")):
        # OpenAI's forcing choices as Anthropic's: "required" is `any`, a named one `tool`
        forced = choice == "required" or isinstance(choice, dict) \
            or isinstance(request.get("function_call"), dict)
        n += anthropic_tool_prompt(model, {"type": "any"} if forced else None)
    # the deprecated `functions` and `function_call` are billed as tools and tool_choice are
    functions, legacy_choice = request.get("functions"), request.get("function_call")
    if functions:
        n += counter.count(msgspec.json.encode(functions).decode())
    for named in (choice, legacy_choice):
        if isinstance(named, dict):
            n += counter.count(msgspec.json.encode(named).decode())
    return n


def conversation_tokens(
    messages: Iterable[Message], counter: Tokenizer, fmt: MessageFormat = OPENAI_FORMAT
) -> int:
    """Tokens a whole request costs: every message plus the reply priming."""
    return fmt.reply_priming + sum(message_tokens(m, counter, fmt) for m in messages)


class WordTokenizer:
    """A deterministic fake tokenizer for tests and examples: one token per whitespace word."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())
