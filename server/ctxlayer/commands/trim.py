"""`ctxlayer trim`: fit a chat into a budget. Result (ctx/trim's TrimResult) on stdout, a one-line
summary on stderr."""

from __future__ import annotations

import sys

import msgspec

from ctxlayer.commands.io import parse_chat, positive, read_input


def add_arguments(parser) -> None:
    parser.add_argument("file", nargs="?", help="chat JSON file (default: stdin)")
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

    from ctxlayer.core.trim import TrimOptions, trim
    from ctxlayer.protocol import TrimResult
    from ctxlayer.tokenizers import counter_for, model_info
    from ctxlayer.workspace.attachments import attached_paths, read_attachments

    messages = parse_chat(read_input(args.file), args.file or "stdin")
    info = model_info(args.model)
    budget = args.budget or (max(1, info.context_window - args.reserve_output)
                             if args.reserve_output else info.default_budget)
    docs = [read_input(d) for d in args.doc]
    attachments = read_attachments(Path(args.workspace), attached_paths(messages))
    report = trim(messages, budget, counter_for(args.model),
                  options=TrimOptions(strategy=args.strategy), docs=docs, attachments=attachments)
    result = TrimResult(messages=report.messages, tokens=report.tokens, budget=report.budget,
                        dropped=report.dropped, truncated=report.truncated)
    sys.stdout.write(msgspec.json.encode(result).decode() + "\n")
    if not args.quiet:
        print(f"trim: {len(messages)} messages in, {len(report.messages)} kept, "
              f"{report.tokens}/{budget} tokens ({info.name}, {args.strategy}); "
              f"{len(report.dropped)} dropped, {len(report.truncated)} shortened", file=sys.stderr)
    return 0
