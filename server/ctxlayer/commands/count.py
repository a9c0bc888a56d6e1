"""`ctxlayer count`: tokens of a text, or of a chat (a list of messages or a request body) as
the gateway counts the request: every message (the system included) with its overheads, the
reply priming, and the tool definitions. The model is `--model`, else the body's `model`; the
format `--format`, else detected as `trim` detects it."""

from __future__ import annotations

import sys

import msgspec

from ctxlayer.cli import UsageError
from ctxlayer.commands.io import (
    DETECTED,
    FORMATS_NAMED,
    chat_model,
    chat_or_text,
    decode_chat,
    read_input,
)
from ctxlayer.core.formats import FORMATS, Decoded


def add_arguments(parser) -> None:
    parser.add_argument("file", nargs="?", help="input file (default: stdin)")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="format of a chat: " + FORMATS_NAMED + DETECTED)
    parser.add_argument("--model", default=None,
                        help="model name (default: the body's `model`, else gpt-4o)")
    parser.add_argument("--text", action="store_true",
                        help="count the input as plain text even if it is a chat (without it, "
                        "input that is no chat is counted as text, with a note on stderr)")
    parser.add_argument("--json", action="store_true", help="print a JSON object")


def chat_tokens(decoded: Decoded) -> tuple[list[int], int, int]:
    """A chat's tokens as the gateway counts its request: each message's, the tool
    definitions', and the total (`formats.request_tokens`: `trim`, ctx/trim and ctx/prepare
    count what they write with it too, so that their figures and `count` of it agree)."""
    from ctxlayer.core.formats import request_tokens
    from ctxlayer.core.tokens import message_tokens, tools_tokens

    counter = decoded.counter
    per = [message_tokens(m, counter) for m in decoded.messages]
    # the gateway's count, by the model the chat was read for
    tools = tools_tokens(decoded.payload, counter, decoded.fmt, decoded.model)
    return per, tools, request_tokens(decoded)


def run(args) -> int:
    from ctxlayer.core.text import counted
    from ctxlayer.tokenizers import counter_for, model_info

    if args.text and args.format is not None:  # one would be read past in silence
        raise UsageError("--text counts the input as plain text and --format reads it as a "
                         "chat: pass one of them")
    text = read_input(args.file)
    source = args.file or "stdin"
    payload, why = (None, "") if args.text else chat_or_text(text, source, args.format)
    if why:  # it looked like JSON: say how it was read, so a chat with a typo is not missed
        print(f"ctxlayer count: {source} counted as text: it is not a chat ({why}); --text "
              "says so without this note", file=sys.stderr)
    model = chat_model(args.model, payload or {}, source)
    info, counter = model_info(model), counter_for(model)
    if payload is not None:
        per, tools, total = chat_tokens(decode_chat(payload, source, counter, args.format, model))
    else:
        per, tools, total = [], 0, counter.count(text)
    if args.json:
        out = {"model": info.name, "encoding": counter.name, "total": total, "tokens": per,
               "tools": tools, "exact": info.exact, "uncertainty": info.uncertainty}
        sys.stdout.write(msgspec.json.encode(out).decode() + "\n")
        return 0
    # an estimate says how it was made (the counter's name, "cl100k_basex1.2", read as a typo)
    band = "" if info.exact else (
        f" (±{info.uncertainty:.0%}: an estimate for {info.family} models, {info.encoding} x "
        f"{info.correction:g})")
    what = counted(len(per), "message") if payload is not None else "text"
    if tools:
        what += f" and tool definitions ({tools})"
    print(f"{total} tokens, {what}, {info.name}{band}")
    return 0
