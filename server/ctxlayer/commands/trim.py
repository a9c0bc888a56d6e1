"""`ctxlayer trim`: fit a chat into a budget. Result (ctx/trim's TrimResult, with `messages`, and
`system` for anthropic, in the input's format; for responses the request with its `input`
fitted) on stdout, a one-line summary on stderr."""

from __future__ import annotations

import sys

import msgspec

from ctxlayer.commands.io import positive, read_chat, read_input
from ctxlayer.core.formats.common import FORMATS

FORMAT_HELP = ("format of the input and the output: ctxlayer (Message objects), openai (Chat "
               "Completions messages or request), anthropic (Messages request with system) or "
               "responses (a Responses request: instructions and input items). "
               "Default: detected; anthropic when there is a system field or Anthropic blocks, "
               "openai when a message has anything a ctxlayer Message has not (developer role, "
               "tool_calls, tool_call_id, name, null or list content), else ctxlayer")


def add_arguments(parser) -> None:
    parser.add_argument("file", nargs="?", help="chat JSON file (default: stdin)")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help=FORMAT_HELP)
    parser.add_argument("--model", default=None, help="model name (default gpt-4o)")
    parser.add_argument("--budget", type=positive, default=None,
                        help="tokens the prompt may use (default: window minus reserved output)")
    parser.add_argument("--reserve-output", type=positive, default=None,
                        help="tokens kept free for the reply when --budget is absent")
    parser.add_argument("--strategy", choices=("pipeline", "priority"), default="pipeline")
    parser.add_argument("--doc", action="append", default=[], metavar="FILE",
                        help="a retrieved document to include (P3); repeatable")
    parser.add_argument("--workspace", default=".", metavar="PATH",
                        help="folder that files attached to messages are read from (default: .);"
                        " paths outside it are refused")
    parser.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")


def run(args) -> int:
    from pathlib import Path

    from ctxlayer.core.formats import encode, trim_options
    from ctxlayer.core.trim import trim
    from ctxlayer.tokenizers import counter_for, model_info
    from ctxlayer.workspace.attachments import attached_paths, read_attachments

    counter = counter_for(args.model)
    decoded = read_chat(read_input(args.file), args.file or "stdin", counter, args.format)
    messages = decoded.messages
    info = model_info(args.model)
    budget = args.budget or (max(1, info.context_window - args.reserve_output)
                             if args.reserve_output else info.default_budget)
    docs = [read_input(d) for d in args.doc]
    attachments = read_attachments(Path(args.workspace), attached_paths(messages))
    report = trim(messages, budget, counter, docs=docs, attachments=attachments,
                  options=trim_options(decoded.fmt, strategy=args.strategy))
    encoded = encode(decoded, report.messages)
    dropped = [*report.dropped, *(e for e in encoded.audit if e.action == "dropped")]
    truncated = [*report.truncated, *(e for e in encoded.audit if e.action != "dropped")]
    if decoded.fmt == "responses":  # the request fitted: `input` and every other field
        result: dict = {"request": encoded.payload}
    else:
        result = {"messages": encoded.payload["messages"]}
    if "system" in encoded.payload and decoded.fmt == "anthropic":
        result["system"] = encoded.payload["system"]
    result |= {"tokens": report.tokens, "budget": report.budget,
               "dropped": msgspec.to_builtins(dropped), "truncated": msgspec.to_builtins(truncated)}
    sys.stdout.write(msgspec.json.encode(result).decode() + "\n")
    if not args.quiet:
        print(f"trim: {len(messages)} messages in, {len(report.messages)} kept, "
              f"{report.tokens}/{budget} tokens ({info.name}, {args.strategy}, {decoded.fmt}); "
              f"{len(dropped)} dropped, {len(truncated)} shortened", file=sys.stderr)
    return 0
