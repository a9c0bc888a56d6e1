"""Reading CLI inputs: text or a chat from a file or stdin, with messages that say what to fix."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import msgspec

from ctxlayer.cli import UsageError
from ctxlayer.core.errors import lone_surrogate, not_utf8
from ctxlayer.core.formats import Decoded, Format, decode, detect
from ctxlayer.core.tokens import Tokenizer, WordTokenizer
from ctxlayer.protocol import Message

#: how `--format` is detected when absent (formats.detect), said once for trim and count
DETECTED = ("Default: detected; anthropic when there is a system field, a tool with an "
            "input_schema or Anthropic blocks; openai when there are OpenAI functions or "
            "parts (image_url, input_audio, file, refusal); anthropic for a body for a Claude "
            "model with user and assistant turns of text only and no OpenAI tools; openai when "
            "a message has anything a ctxlayer Message has not (developer role, tool_calls, "
            "tool_call_id, name, null or list content), else ctxlayer")
FORMATS_NAMED = ("ctxlayer (Message objects), openai (Chat Completions messages or request), "
                 "anthropic (Messages request) or responses (a Responses request: instructions "
                 "and input items). ")


def read_input(path: str | None) -> str:
    """The text of a file, or of stdin for None or "-", read as bytes and decoded strictly:
    a bad byte is reported by its position instead of reaching the JSON reader as a
    surrogate (Python's stdin decoding lets them through)."""
    if path in (None, "-"):
        if sys.stdin.isatty():
            raise UsageError("no input: pipe a chat into stdin or name a file")
        return decode_utf8(sys.stdin.buffer.read(), "stdin")
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror})") from None
    return decode_utf8(data, path)


def decode_utf8(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{source} is {not_utf8(data)}") from None


def load_json(text: str, source: str = "stdin"):
    """JSON data from text; a UTF-8 byte-order mark is accepted (Windows editors write one)."""
    read = text.removeprefix("\ufeff")
    if not read.strip():
        raise UsageError(f"{source} is empty: expected a JSON list of messages or a request")
    try:
        return msgspec.json.decode(read)
    except msgspec.DecodeError as exc:
        why = lone_surrogate(text.encode())  # bytes as in the file, its mark included
        raise UsageError(f"{source} is not valid JSON: {why}" if why else
                         f"{source} is not valid JSON ({exc}); expected a list of messages"
                         ) from None
    except RecursionError:
        raise UsageError(f"{source}: JSON nested too deeply to read; a chat is a list of "
                         "messages a few levels deep") from None


def load_chat(text: str, source: str, fmt: Format | None = None) -> tuple[dict, bool]:
    """The payload of a chat, and whether it came as a request body (`{"messages": [...],
    ...}`, or a Responses request with `input`) rather than a bare list of messages (which is
    wrapped as `{"messages": list}`, `{"input": list}` for responses)."""
    data = load_json(text, source)
    if trim_result(data):  # read as the list it was fitted from: trimmed again, it stays one
        data = data["messages"]
    if isinstance(data, list):
        return {"input" if fmt == "responses" else "messages": data}, False
    if not isinstance(data, dict) or ("messages" not in data and "input" not in data):
        raise UsageError(f"{source}: expected a JSON list of messages (or {{\"messages\": "
                         "[...]})")
    return data, True


#: the fields of ctx/trim's result beside its messages, which `trim` writes for a bare list
_TRIM_RESULT = frozenset({"tokens", "budget", "dropped", "truncated", "percent"})


def trim_result(data: object) -> bool:
    """Whether `data` is ctx/trim's result (what `trim` of a bare list writes): its
    `messages` are that list in the input's format, a Responses list's items too. Read as a
    request body, a Responses one was refused ("input: missing"), so `count` and `trim` could
    not read back what `trim --format responses` wrote."""
    return (isinstance(data, dict) and isinstance(data.get("messages"), list)
            and {"tokens", "budget"} <= data.keys() <= _TRIM_RESULT | {"messages"})


#: what says a JSON text means to be a chat even where it is not valid JSON
_CHAT_KEYS = re.compile(r'"(?:role|messages)"\s*:')


def chat_or_text(text: str, source: str, fmt: Format | None) -> tuple[dict | None, str]:
    """For `count`: the payload of a chat, or None and why the input is plain text ("" when
    it does not even start as JSON). A text is a chat when `--format` names one, or when it is
    JSON that holds a chat: a list with a message (an object with a `role`) or empty, or an
    object with `messages` or `input`. A single message object, or JSON that is not valid but
    has a `role` or `messages` key, is a chat with a mistake: its error says so. Anything
    else (a log line `[INFO] ...`, a README's `[![badge]`, JSONL, a package.json) is text."""
    if fmt is not None:
        return load_chat(text, source, fmt)[0], ""
    if text.lstrip().removeprefix("\ufeff")[:1] not in ("[", "{"):
        return None, ""
    try:
        data = load_json(text, source)
    except UsageError as exc:
        if _CHAT_KEYS.search(text) is None:  # said as it is: deep JSON is valid JSON
            return None, "JSON nested too deeply to read" if "nested" in str(exc) else \
                "not valid JSON"
        raise UsageError(f"{exc}; --text counts it as plain text") from None
    if isinstance(data, list):
        if not data or any(isinstance(m, dict) and "role" in m for m in data):
            return {"messages": data}, ""
        return None, "a JSON list without messages (objects with a role)"
    if isinstance(data, dict) and ("messages" in data or "input" in data):
        return data, ""
    if isinstance(data, dict) and "role" in data:  # one message, not a list of them
        raise UsageError(f"{source}: one message, not a chat: put it in a list ([{{...}}]) or "
                         'a request ({"messages": [...]}); --text counts it as plain text')
    return None, 'JSON without "messages" or "input"'


def chat_model(requested: str | None, payload: dict, source: str = "stdin") -> str | None:
    """The model to count for: `--model`, else the request body's own `model`. A body's
    `model` that is no model name is refused, as the gateway refuses it: read past, a body
    with `"model": 5` was fitted for gpt-4o and written back "ready to send" with it."""
    model = payload.get("model")
    if requested:  # the model named: the body's is read past, as it was
        return requested
    if model is not None and not (isinstance(model, str) and model.strip()):
        raise UsageError(f"{source}: `model` must be a non-empty string, got {_shown(model)}; "
                         "or name the model with --model")
    return model


def output_room(payload: dict, fmt: Format, source: str = "stdin") -> None:
    """Refuse a body whose output room (`max_tokens`, ...) is no positive whole number: the
    budget is the window less it, and read past (`"100"`, `-5`), the model's usual allowance
    was taken and the body written back with a value the provider refuses."""
    from ctxlayer.core.formats import codec

    for key in codec(fmt).reserve:
        value = payload.get(key)
        # a whole number written 1024.0 too: the budget reads whole numbers only (the review
        # probe: accepted, it was read past, and 64000.0 went back "ready to send" beside a
        # budget that left it no room)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise UsageError(f"{source}: `{key}` must be a positive whole number, got "
                             f"{_shown(value)}")


def _shown(value: object) -> str:
    text = msgspec.json.encode(value).decode()
    return text if len(text) <= 40 else f"{text[:37]}..."


def decode_chat(payload: dict, source: str, counter: Tokenizer, fmt: Format | None = None,
                model: str | None = None) -> Decoded:
    """A chat payload in `fmt` (None: detected, see formats.detect), read by `model` (the
    one counted for, `chat_model`: `--model` decides all a model decides, not only the
    encoding)."""
    try:
        return decode(fmt or detect(payload, model), payload, counter, model=model)
    except RecursionError:
        raise UsageError(f"{source}: a message nested too deeply to read") from None


def read_chat(text: str, source: str, counter: Tokenizer, fmt: Format | None = None
              ) -> Decoded:
    """A chat in `fmt` (None: detected): a list of messages or a request body with
    `messages` (and `system` for anthropic)."""
    return decode_chat(load_chat(text, source, fmt)[0], source, counter, fmt)


def parse_chat(text: str, source: str = "stdin", counter: Tokenizer | None = None
               ) -> list[Message]:
    """The engine's messages of a chat in any format, without the ids the codec made up."""
    return engine_messages(read_chat(text, source, counter or WordTokenizer()))


def engine_messages(d: Decoded) -> list[Message]:
    """A decoded chat's messages without the ids the codec made up (they name nothing the
    user sent)."""
    return [msgspec.structs.replace(m, id=None) if m.id in d.derived_ids else m
            for m in d.messages]


#: a number of tokens as people type it: 32000, 32,000 or 32_000 (separators only between
#: groups of three digits), 32k, 1.5k, 1M or 1.5M; a fraction only with k or M; ASCII digits
#: only (`\d` took Arabic-Indic ones: "١٢٣٤" was read as 1234)
_TOKENS = re.compile(r"(?P<whole>\d+|\d{1,3}(?:,\d{3})+|\d{1,3}(?:_\d{3})+)"
                     r"(?:\.(?P<fraction>\d+))?(?P<unit>[kKmM]?)", re.ASCII)
_UNITS = {"": 1, "k": 1_000, "m": 1_000_000}
#: the forms a budget may take, said in every refusal
TOKEN_FORMS = "such as 128000, 128,000, 128k, 1.5k or 1M"


def positive(value: str) -> int:
    """argparse type for numbers of tokens (TOKEN_FORMS). Anything else is refused rather
    than guessed: "1,5k" (a European 1.5k) had its comma dropped and gave 15000, and "32kk"
    had every k stripped and gave 32000."""
    n = tokens(value)
    if n <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of tokens, got {value!r}")
    return n


def reserve(value: str) -> int:
    """argparse type for an output reserve: a number of tokens as `positive` takes it, or 0
    (none kept for the reply: the whole window), as the daemon's `reserveOutput` takes it."""
    return tokens(value)


def tokens(value: str) -> int:
    """A number of tokens, 0 or more (TOKEN_FORMS), at most what a client may name
    (MAX_TOKENS; said by argparse with the option's name, not as a `budget` field)."""
    from ctxlayer.core.errors import MAX_TOKENS

    m = _TOKENS.fullmatch(value.strip())
    if m is None or (m["fraction"] is not None and not m["unit"]):
        if value.strip().startswith("-"):
            raise argparse.ArgumentTypeError(
                f"expected a positive number of tokens, got {value!r}")
        comma = "," in value and "." not in value  # 1,5k: a decimal comma
        raise argparse.ArgumentTypeError(
            f"expected a number of tokens {TOKEN_FORMS}, got {value!r}"
            + ("; a comma only separates thousands, a fraction takes a point" if comma else ""))
    whole = int(m["whole"].replace(",", "").replace("_", ""))
    fraction = m["fraction"] or ""
    scale = _UNITS[m["unit"].lower()]
    n, rest = divmod((whole * 10 ** len(fraction) + int(fraction or 0)) * scale,
                     10 ** len(fraction))
    if rest:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of tokens")
    if n > MAX_TOKENS:
        raise argparse.ArgumentTypeError(f"at most {MAX_TOKENS:,} tokens, got {value!r}")
    return n
