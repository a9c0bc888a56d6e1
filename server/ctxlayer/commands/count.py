"""`ctxlayer count`: tokens of a text, or of a chat (a JSON list of messages) as a request."""

from __future__ import annotations

import sys

import msgspec

from ctxlayer.commands.io import parse_chat, read_input


def add_arguments(parser) -> None:
    parser.add_argument("file", nargs="?", help="input file (default: stdin)")
    parser.add_argument("--model", default=None, help="model name (default gpt-4o)")
    parser.add_argument("--text", action="store_true",
                        help="count the input as plain text even if it is JSON")
    parser.add_argument("--json", action="store_true", help="print a JSON object")


def run(args) -> int:
    from ctxlayer.core.tokens import conversation_tokens, message_tokens
    from ctxlayer.tokenizers import counter_for, model_info

    text = read_input(args.file)
    info, counter = model_info(args.model), counter_for(args.model)
    stripped = text.lstrip()
    if not args.text and stripped[:1] in "[{":
        messages = parse_chat(text, args.file or "stdin", counter)
        per = [message_tokens(m, counter) for m in messages]
        total = conversation_tokens(messages, counter)
    else:
        per, total = [], counter.count(text)
    if args.json:
        out = {"model": info.name, "encoding": counter.name, "total": total, "tokens": per,
               "exact": info.exact, "uncertainty": info.uncertainty}
        sys.stdout.write(msgspec.json.encode(out).decode() + "\n")
        return 0
    band = "" if info.exact else f" (±{info.uncertainty:.0%}: {info.family} counted with {counter.name})"
    what = f"{len(per)} messages" if per else "text"
    print(f"{total} tokens, {what}, {info.name}{band}")
    return 0
