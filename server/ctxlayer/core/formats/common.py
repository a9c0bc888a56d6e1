"""What the format codecs share: the Decoded and Encoded shapes, stable message ids, errors
that name the field, and putting shortened text (and outlined tool-call arguments) back into a
message's native form.

No codec logic lives here; each format's reading and writing is in its own module.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ctxlayer.core.errors import ContextError
from ctxlayer.core.tokens import OPENAI_FORMAT
from ctxlayer.protocol import AuditAction, AuditEntry, Message

Format = Literal["ctxlayer", "openai", "anthropic", "responses"]
FORMATS: tuple[Format, ...] = ("ctxlayer", "openai", "anthropic", "responses")


@dataclass(slots=True)
class Decoded:
    """A provider payload read for the engine.

    `messages` is the engine's view; `sources[i]` says where messages[i] came from in the
    payload (a codec-specific key); `index` maps an engine id to its position, so that encode
    finds the native message of each kept one.
    """

    fmt: Format
    messages: list[Message]
    payload: dict
    sources: list[Any] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    #: engine ids the codec made up (the message had none); never sent to the provider
    derived_ids: set[str] = field(default_factory=set)
    #: the counter decode used, so that encode's audit entries carry token counts
    counter: Any = None
    #: codec-specific facts encode needs (anthropic: the engine messages of each native one)
    extra: dict = field(default_factory=dict)
    #: the model that reads the request, whose rules decode applied (images, thinking read
    #: again) and the tools' count applies (Anthropic's tool-use prompt): one named outside the
    #: body (a `--model`, a request's `model` param), else the body's `model`
    model: str | None = None


@dataclass(frozen=True, slots=True)
class SentTokens:
    """A request's count laid out as its client sent it: `messages[i]` is what its i-th message
    (input item) costs, `system` what its system prompt kept apart from them costs (Anthropic
    `system`, Responses `instructions`; None when the request has none). The engine reads
    some messages as several (Anthropic's tool results) and some items as one (a Responses
    run of calls); a client asks about the ones it sent."""

    messages: list[int]
    system: int | None = None


def sent_one_to_one(decoded: Decoded, tokens: Sequence[int], counter: Any) -> SentTokens:
    """The layout of a format whose every message is one engine message (ctxlayer, Chat
    Completions: `sources[k]` is the message's position)."""
    out = [0] * len(decoded.payload.get("messages") or ())
    for source, n in zip(decoded.sources, tokens, strict=True):
        out[source] += n
    return SentTokens(out)


@dataclass(frozen=True, slots=True)
class Codec:
    """One format's pure side, as the state and the faces look it up (never by its name):
    how to read and write it, and where a request in it keeps what the engine fits."""

    name: Format
    decode: Callable[..., Decoded]
    encode: Callable[..., Encoded]
    #: the request's key that holds the conversation
    conversation: str = "messages"
    #: the request's key that holds the system prompt outside the conversation, if any
    system: str | None = None
    #: where a system prompt's dynamic section goes when the format keeps its system prompt
    #: before the conversation: (conversation, texts) -> the conversation with the texts
    #: after its history. None: system messages stay in the conversation, in their place
    after_history: Callable[[list, Sequence[str]], list] | None = None
    #: the request's keys that ask for output room, the first one set wins
    reserve: tuple[str, ...] = ("max_completion_tokens", "max_tokens")
    #: why a request cannot be fitted (sent as it came), else None
    unfittable: Callable[[dict], str | None] = lambda request: None
    #: why a request with no conversation and no system prompt goes as it came (its prompt is
    #: the provider's); None: the format needs a message, and such a request is refused
    empty: str | None = None
    #: the texts that name a conversation without an id (None: system + first user message)
    identity: Callable[[dict], list[str]] | None = None
    #: whether a request must start with a user turn (the fit then drops the turns before
    #: the first user message itself, so their room is used; the encoder's repair is the last
    #: resort): None, never
    user_first: Callable[[Decoded], bool] | None = None
    #: where a request carries the client's own id of its chat, first found wins: dotted
    #: paths into the body (Anthropic `metadata.user_id`; OpenAI `prompt_cache_key`, `user`)
    hints: tuple[str, ...] = ("prompt_cache_key", "user")
    #: (decoded, each engine message's tokens, counter) -> the tokens of each message the
    #: client sent and of its system prompt (ctx/count answers in the client's terms)
    sent: Callable[[Decoded, Sequence[int], Any], SentTokens] = sent_one_to_one


@dataclass(slots=True)
class Encoded:
    payload: dict
    audit: list[AuditEntry] = field(default_factory=list)
    #: anthropic: indices into payload["messages"] of the messages carrying cache_control
    breakpoints: list[int] = field(default_factory=list)
    #: anthropic: system blocks carrying cache_control
    system_breakpoints: int = 0


def reusable_prefix(previous: Decoded | None, fmt: str, raw: list, counter: Any) -> int:
    """How many leading native messages are the same as in `previous` (the decode of this
    conversation's previous turn): their engine messages are taken over instead of read again.
    Only with a counter that counts alike (part costs depend on it)."""
    if previous is None or previous.fmt != fmt or not counts_alike(previous.counter, counter):
        return 0
    old = previous.payload.get("messages") or []
    n, k = min(len(old), len(raw)), 0
    if raw[:n] == old[:n]:  # the usual turn, a chat grown at its end: compared in C at once
        return n
    while k < n and (raw[k] is old[k] or raw[k] == old[k]):
        k += 1
    return k


def counts_alike(a: Any, b: Any) -> bool:
    """The same counter, or two faces of one encoding (a live chat's turn counts through a
    guarded counter on a worker, through the bare cache on the loop): the same name."""
    if a is b:
        return True
    name = getattr(a, "name", None)
    return isinstance(name, str) and name == getattr(b, "name", None)


def bad(where: str, what: str) -> ContextError:
    return ContextError("invalid", f"{where}: {what}", field=where)


def expect_dict(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise bad(where, f"expected an object, got {type(value).__name__}")
    return value


def expect_str(value: Any, where: str, what: str = "a string") -> str:
    if not isinstance(value, str):
        raise bad(where, f"expected {what}, got {type(value).__name__}")
    return value


def messages_of(payload: Any) -> list:
    if not isinstance(payload, dict):
        raise bad("messages", "expected an object with a messages list")
    msgs = payload.get("messages")
    if not isinstance(msgs, list):
        raise bad("messages", "expected a list of messages")
    return msgs


_SAMPLE = 512  # characters of each end of a long text that go into its id


def derive_id(prefix: str, position: str, *parts: str) -> str:
    """An id for a message that has none: its position and a digest of its content, so the same
    message gets the same id on every turn of an append-only conversation. A long text enters
    the digest by its length and both ends: hashing every character of a 1M-token chat on every
    turn would cost more than the trim (the position already makes ids unique)."""
    key = "\x00".join([p if len(p) <= 2 * _SAMPLE else f"{len(p)}:{p[:_SAMPLE]}{p[-_SAMPLE:]}"
                       for p in parts])  # a list: a generator costs more for two or three
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()
    return f"{prefix}{position}.{digest}"


def client_id(native: dict) -> str | None:
    """The client's own id for a message: under a `ctxlayer` key, else a string `id`."""
    own = native.get("ctxlayer")
    if isinstance(own, dict) and isinstance(own.get("id"), str):
        return own["id"]
    return native["id"] if isinstance(native.get("id"), str) else None


#: Anthropic blocks that cannot carry a cache marker
NOT_CACHEABLE = ("thinking", "redacted_thinking")


def share_text(parts: list, text: str, is_text: Callable[[Any], bool],
               part: dict | None = None) -> tuple[list, list[int]]:
    """(the parts with `text`, a shortened text of their text parts joined by newlines, told
    back out to them; the places in `parts` of the text parts left with none of it, which
    went). Each text part that stays keeps its own fields (a `cache_control`, `citations`, a
    field this version does not know; joined into the first, the second's were lost): see
    `_told_out`. A cache marker on a part that went moves to a text part that stays, the
    nearest before it, else after it. Every non-text part stays where it was. With no text
    part, a new one comes first: `part` with the text (Chat Completions' and Anthropic's
    `{"type": "text"}` by default; a Responses item takes only its own kinds). A blank `text`
    (the fit kept none of the words of a message whose other parts it kept: its thinking and
    calls, an image) removes the text parts: Anthropic refuses a text block of whitespace,
    and an empty one says nothing."""
    at = [k for k, p in enumerate(parts) if is_text(p)]
    if not text.strip() and len(at) < len(parts):
        return _without_text(parts, is_text), at
    if not at:
        return [{**(part or {"type": "text"}), "text": text}, *parts], []
    shares = dict(zip(at, _told_out([parts[k].get("text") or "" for k in at], text),
                      strict=True))
    gone = [k for k in at if shares[k] is None]
    out = [p if k not in shares or shares[k] == p.get("text") else {**p, "text": shares[k]}
           for k, p in enumerate(parts) if shares.get(k, "") is not None]
    for k in gone:
        marker = parts[k].get("cache_control")
        stays = [j for j in at if shares[j] is not None]
        near = ([j for j in stays if j < k][-1:] or stays[:1])[0]
        place = sum(1 for j in range(near) if shares.get(j, "") is not None)
        if marker is not None and out[place].get("cache_control") is None:
            out[place] = {**out[place], "cache_control": marker}
    return out, gone


def _told_out(texts: list[str], new: str) -> list[str | None]:
    """`new`, the shortened text of `texts` joined by newlines, told back out to them so
    that the shares joined by newlines are `new` again (what the fit counted is what goes):
    the texts at either end that `new` still holds whole keep it; of the rest, the first
    takes what `new` keeps of its start (with the outline's marker) and the last what `new`
    keeps of its end, cut at a line end of `new`; those between held only what was left
    out (None). Where no such cut is found (a summary, one long line) the first of the rest
    takes it all, the others None."""
    lo, hi, rest = 0, len(texts), new
    while hi - lo > 1 and rest.startswith(texts[lo] + "\n"):
        rest, lo = rest[len(texts[lo]) + 1:], lo + 1
    while hi - lo > 1 and rest.endswith("\n" + texts[hi - 1]):
        rest, hi = rest[:len(rest) - len(texts[hi - 1]) - 1], hi - 1
    middle: list[str | None] = [None] * (hi - lo)
    same = _same_end(rest, texts[hi - 1]) if hi - lo > 1 else 0
    cut = rest.find("\n", max(0, len(rest) - same - 1)) if same < len(rest) else -1
    if same and same >= len(rest):  # all of it is the last one's end
        middle[-1] = rest
    elif cut > 0 and rest[:cut].strip() and rest[cut + 1:].strip():
        middle[0], middle[-1] = rest[:cut], rest[cut + 1:]
    else:
        middle[0] = rest
    return [*texts[:lo], *middle, *texts[hi:]]


def _same_end(a: str, b: str) -> int:
    """How many characters `a` and `b` end with alike: compared a block at a time (a tool's
    output runs to megabytes), then a character at a time in the block that differs."""
    n, limit, block = 0, min(len(a), len(b)), 4096
    while n < limit:
        k = min(block, limit - n)
        if a[len(a) - n - k:len(a) - n] != b[len(b) - n - k:len(b) - n]:
            while a[len(a) - n - 1] == b[len(b) - n - 1]:
                n += 1
            return n
        n += k
    return n


def _without_text(parts: list, is_text: Callable[[Any], bool]) -> list:
    """``parts`` but their text parts (at least one other is there); a cache marker one of
    them carried moves to the last part before it that may carry one (the client's breakpoint
    stays where it was, or just before), else to the first after it."""
    kept = [(k, p) for k, p in enumerate(parts) if not is_text(p)]
    out = [p for _, p in kept]
    for k, p in enumerate(parts):
        if not is_text(p) or not isinstance(p, dict) or p.get("cache_control") is None:
            continue
        before = [j for j, (at, q) in enumerate(kept) if at < k and _may_mark(q)]
        after = [j for j, (at, q) in enumerate(kept) if at > k and _may_mark(q)]
        j = before[-1] if before else (after[0] if after else None)
        if j is not None and out[j].get("cache_control") is None:
            out[j] = {**out[j], "cache_control": p["cache_control"]}
    return out


def _may_mark(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") not in NOT_CACHEABLE


def calls_tokens(messages: Sequence[Message], call_ids: set[str], counter: Any) -> int:
    """What the tool calls ``call_ids`` of ``messages`` cost as the engine counts them (name,
    arguments, framing): the audit of a repair that removes them says what that saved."""
    if counter is None:
        return 0
    return sum(OPENAI_FORMAT.per_tool_call + counter.count(c.name) + counter.count(c.arguments)
               for m in messages for c in m.tool_calls or () if c.id in call_ids)


def audit(action: AuditAction, reason: str, summary: str, before: int = 0, after: int = 0,
          message_id: str | None = None, index: int | None = None) -> AuditEntry:
    return AuditEntry(action=action, reason=reason, summary=summary, tokens_before=before,
                      tokens_after=after, message_id=message_id, index=index)


def parts_gone(parts: list, gone: Sequence[int], m: Message, whose: str) -> list[AuditEntry]:
    """An entry for each text part of `whose` (`m`'s native message, or a result in it) that
    its shortened text left with none of its words (`share_text`): what the part was, and
    its own fields that went with it. Its words are counted in `m`'s own entry, so 0 here."""
    out = []
    for k in gone:
        own = sorted(str(f) for f in parts[k] if f not in ("type", "text", "cache_control"))
        fields = f"; its own fields went with it: {', '.join(own)}" if own else ""
        out.append(audit("dropped", "a text part the shortening left empty: its words were left "
                         f"out, or what is kept of them is in another text part{fields}",
                         f"{whose}: part {k + 1} of {len(parts)} (text)", message_id=m.id))
    return out


def new_arguments(original: Message, m: Message) -> list[str | None] | None:
    """The arguments of ``m``'s calls where they differ from ``original``'s (the engine
    outlined them), None at a call left as it was; None when none differ. A codec writes
    them into the native calls, so that the request sends what was counted."""
    if m.tool_calls is original.tool_calls:  # the engine left the calls alone: no rewrite
        return None
    before, now = original.tool_calls or [], m.tool_calls or []
    if len(before) != len(now):
        return None  # not a rewrite of the same calls: sent as the client's
    out = [b.arguments if b.arguments != a.arguments else None
           for a, b in zip(before, now, strict=True)]
    return out if any(a is not None for a in out) else None
