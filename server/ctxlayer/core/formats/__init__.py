"""Provider formats in the core: one pure codec per format (ctxlayer, OpenAI Chat Completions,
Anthropic Messages, OpenAI Responses), registered in one table (`codec(fmt)`), and the dispatch.

`decode` reads a request body (or the part of it with the conversation) into the engine's
messages, naming the field of anything it cannot read; `encode` writes the messages the engine
kept back into the same format, every other field untouched, each kept message the very dict
the client sent (shortened ones with their new text in their text parts), repaired where the
fit left the request invalid, every repair audited. No I/O; a URL is never fetched.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxlayer.core.formats import anthropic, ctxlayer, openai, responses
from ctxlayer.core.formats.common import (
    FORMATS,
    Codec,
    Decoded,
    Encoded,
    Format,
    SentTokens,
    bad,
)
from ctxlayer.core.model_names import is_claude
from ctxlayer.core.tokens import Tokenizer, conversation_tokens, messages_tokens, tools_tokens
from ctxlayer.core.trim import TrimOptions
from ctxlayer.protocol import Message

__all__ = ["FORMATS", "Codec", "Decoded", "Encoded", "Format", "SentTokens", "codec", "decode",
           "detect", "encode", "other_format", "request_tokens", "sent_tokens", "trim_options",
           "written"]

#: every format, by its name on the wire: the one place a format is registered
CODECS: dict[str, Codec] = {c.name: c for c in (
    Codec("ctxlayer", ctxlayer.decode, ctxlayer.encode),
    Codec("openai", openai.decode, openai.encode),
    Codec("anthropic", anthropic.decode, anthropic.encode, system="system",
          after_history=anthropic.after_history, hints=("metadata.user_id",),
          user_first=anthropic.user_first, sent=anthropic.sent_tokens),
    Codec("responses", responses.decode, responses.encode, conversation="input",
          system="instructions", reserve=("max_output_tokens",),
          unfittable=responses.unfittable, identity=responses.identity_text,
          empty=responses.NO_INPUT, sent=responses.sent_tokens),
)}
assert tuple(CODECS) == FORMATS


def codec(fmt: str) -> Codec:
    """The codec of `fmt`, or a ContextError naming the `format` field."""
    found = CODECS.get(fmt)
    if found is None:
        raise bad("format", f"expected one of {', '.join(FORMATS)}, got {fmt!r}")
    return found


_codec = codec


_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking",
                               "document", "image", "server_tool_use"})
#: content parts only Chat Completions has: a body with one is OpenAI's whatever its model (a
#: Claude model behind OpenRouter or LiteLLM reads them translated)
_OPENAI_PARTS = frozenset({"image_url", "input_audio", "file", "refusal"})


def detect(payload: dict, model: str | None = None) -> Format:
    """The format a payload is most likely in, for callers that were not told: responses when
    it has `input` and no `messages`; anthropic when it has `system`, a tool with an
    `input_schema`, or Anthropic-only blocks; openai when the body has OpenAI's `functions`,
    a message has an OpenAI-only part (image_url, input_audio, file, refusal) or anything else
    the ctxlayer Message has not (developer role, tool_calls, tool_call_id, name, null or list
    content, any other field); else ctxlayer. A body both Anthropic and OpenAI read alike (user and
    assistant turns, text blocks, no OpenAI tools) is anthropic when its `model` is a Claude
    model (`model`, when named outside the body, else the body's): the two count it
    differently (Anthropic adds its tool-use system prompt)."""
    if "input" in payload and "messages" not in payload:
        return "responses"
    tools = payload.get("tools") if isinstance(payload.get("tools"), list) else []
    if "system" in payload or any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return "anthropic"
    msgs = payload.get("messages")
    if not isinstance(msgs, list):
        return "ctxlayer"
    if any(_anthropic_only(m) for m in msgs):
        return "anthropic"
    # OpenAI's own (a Claude body with them was read as Anthropic's: its functions not counted)
    if "functions" in payload or any(_part_types(m) & _OPENAI_PARTS for m in msgs):
        return "openai"
    if is_claude(model or payload.get("model")) and not any(_openai_tool(t) for t in tools) and all(
            _anthropic_reads(m) for m in msgs):
        return "anthropic"
    return "ctxlayer" if all(_ctxlayer_reads(m) for m in msgs) else "openai"


def _openai_tool(tool: object) -> bool:
    return isinstance(tool, dict) and ("function" in tool or tool.get("type") == "function")


def _part_types(m: object) -> set[object]:
    """The `type` of each content part (block) of a message, none for string content."""
    content = m.get("content") if isinstance(m, dict) else None
    if not isinstance(content, list):
        return set()
    # a type that is no string is no type: left to the decoder, which names the field (a list
    # or a dict here was a TypeError, unhashable, and the CLI's traceback)
    return {t for b in content if isinstance(b, dict) and isinstance(t := b.get("type"), str)}


def _anthropic_only(m: object) -> bool:
    """A message with a block only Anthropic has (tool_use, thinking, an image source...)."""
    return bool(_part_types(m) & _ANTHROPIC_BLOCKS)


def _anthropic_reads(m: object) -> bool:
    """A message Anthropic reads as it is: a user or assistant turn, role and content only,
    its parts text (a part of any other type is read differently, or by one format only)."""
    content = m.get("content") if isinstance(m, dict) else None
    return (isinstance(m, dict) and m.get("role") in ("user", "assistant")
            and content is not None and {"role", "content"}.issuperset(m)
            and _part_types(m) <= {"text"})


def _ctxlayer_reads(m: object) -> bool:
    """A message a ctxlayer Message reads (its decoder names a bad field): no null or list
    content, no developer role, no field a Message has not."""
    content = m.get("content") if isinstance(m, dict) else ""
    return not isinstance(m, dict) or (
        content is not None and not isinstance(content, list) and m.get("role") != "developer"
        and ctxlayer.FIELDS.issuperset(m))


def other_format(fmt: str, payload: object) -> tuple[str, str, list[str]] | None:
    """A body of another format read as `fmt`: (the key of `fmt`'s conversation it lacks, the
    other's key it has, the formats that keep their conversation there); None when it has
    its own key or neither. Responses' `input` is optional (a stored prompt), so a Chat
    Completions body read as responses was 0 messages, counted as nothing and passed on
    unfitted; the other way it was "expected a list of messages", the format unsaid."""
    key = codec(fmt).conversation
    if not isinstance(payload, dict) or payload.get(key) is not None:
        return None
    for other in CODECS.values():
        if other.conversation != key and payload.get(other.conversation) is not None:
            return key, other.conversation, [c.name for c in CODECS.values()
                                             if c.conversation == other.conversation]
    return None


def decode(fmt: Format, payload: dict, counter: Tokenizer, *, previous: Decoded | None = None,
           whole: bool = False, model: str | None = None) -> Decoded:
    """The engine's view of `payload` in format `fmt`. `previous`, the Decoded of the same
    conversation's previous turn, lets the messages it shares with this one be taken over
    instead of read again (the result is the same either way). A request's messages before
    the provider's own compaction (Anthropic's `compaction` block) are not the engine's (the
    provider does not read them); `whole` reads them too (a session's history: kept, not sent
    as it is). `model`, a model named outside the body (a `--model`, a request's `model`
    param), reads it in the body's stead: every rule a model decides (Claude's image rule,
    which thinking is read again, `Decoded.model` for the tools' count) is that model's, in
    this one place, the body that goes back untouched."""
    wrong = other_format(fmt, payload)
    if wrong is not None:
        key, has, names = wrong
        named = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        article = "an" if fmt[:1] in "aeiou" else "a"
        raise bad(key, f"missing, and the body has `{has}`: not {article} {fmt} request; read "
                       f"it as format {named}")
    tools = payload.get("tools") if isinstance(payload, dict) else None
    if tools is not None and not isinstance(tools, list):  # every format's is a list: a
        # string was counted as 346 tokens of tool definitions (anthropic), or as none
        raise bad("tools", f"expected a list of tool definitions, got {type(tools).__name__}")
    own = payload.get("model") if isinstance(payload, dict) else None
    if not model or model == own or not isinstance(payload, dict):
        decoded = _codec(fmt).decode(payload, counter, previous, whole)
        decoded.model = own if isinstance(own, str) and own else None
        return decoded
    # the codecs read the model from the body: they read a copy naming the one asked for
    decoded = _codec(fmt).decode({**payload, "model": model}, counter, previous, whole)
    decoded.payload, decoded.model = payload, model
    return decoded


def encode(decoded: Decoded, kept: Sequence[Message], *, cache_breakpoints: Sequence[int] = ()
           ) -> Encoded:
    """`decoded.payload` with its conversation replaced by `kept` (a subsequence of
    decoded.messages as the trim engine returns it, ids kept)."""
    return _codec(decoded.fmt).encode(decoded, kept, cache_breakpoints=cache_breakpoints)


def request_tokens(decoded: Decoded) -> int:
    """A request's tokens as the provider bills them: every message with its overheads, the
    reply priming, and the tool definitions (by the model it was read for). `ctxlayer count`
    says this number of a body."""
    counter = decoded.counter
    return conversation_tokens(decoded.messages, counter) + tools_tokens(
        decoded.payload, counter, decoded.fmt, decoded.model)


def written(decoded: Decoded, encoded: Encoded, *, reuse: bool = False) -> tuple[Decoded, int]:
    """(the request `encoded` writes, read back as `decoded` was read: its format, counter and
    model; its `request_tokens`). A figure said of what goes out is this one, not the fit's
    count of the kept messages: the encoder's repairs change the request after the fit (a
    leading assistant turn dropped, two user turns merged into one, a call left without its
    result removed), and a merged turn costs one message's overhead, not two. `reuse`: the
    messages it shares with `decoded` are taken over, not read again (a live chat's turn,
    whose request is long; the result is the same)."""
    sent = decode(decoded.fmt, encoded.payload, decoded.counter,
                  previous=decoded if reuse else None, model=decoded.model)
    return sent, request_tokens(sent)


def sent_tokens(decoded: Decoded, counter: Tokenizer) -> SentTokens:
    """What each message the client sent costs, and its system prompt kept apart: the engine's
    count of `decoded` (`message_tokens` of each of its messages, so the sum is what a trim
    counts) laid out as the request holds it, by its format's codec."""
    return _codec(decoded.fmt).sent(decoded, messages_tokens(decoded.messages, counter), counter)


def trim_options(fmt: Format, decoded: Decoded | None = None, **fields) -> TrimOptions:
    """TrimOptions for a conversation in `fmt`: in a provider format a request that fits its
    budget is sent as it came (no dedup, no reasoning stripped), so that it comes back equal;
    with the `decoded` request, the format's rules of what the fit keeps (`user_first`)."""
    rule = _codec(fmt).user_first
    first = decoded is not None and rule is not None and rule(decoded)
    return TrimOptions(rewrite_when_fits=fmt == "ctxlayer", user_first=first, **fields)
