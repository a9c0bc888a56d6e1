"""`ctxlayer demo`: the main job on embedded defaults, offline: the layered system prompt of a
workspace (default: the current folder) and a trim of the sample chat bundled with ctxlayer."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from ctxlayer.commands.io import parse_chat, positive


def add_arguments(parser) -> None:
    parser.add_argument("path", nargs="?", default=".", help="workspace folder (default: .)")
    parser.add_argument("--model", default="gpt-4o")
    parser.add_argument("--budget", type=positive, default=8_000,
                        help="budget for the sample chat's trim (default 8000)")


def _shown(sample) -> str:
    """The sample's path as the user can type it here: relative to the current folder when it
    is under it (`make demo` in a checkout), else absolute (an installed ctxlayer)."""
    path = Path(str(sample)).resolve()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def run(args) -> int:
    from ctxlayer.commands.prompt import build, table
    from ctxlayer.core.tokens import conversation_tokens
    from ctxlayer.core.trim import trim
    from ctxlayer.tokenizers import counter_for

    # built before anything is printed: a folder that cannot be read is one line on stderr
    # and nothing on stdout (the header went out before the error)
    prompt, segment = build(Path(args.path), args.model)
    print(f"== 1. The system prompt for {Path(args.path).resolve()} ({args.model})\n")
    print(table(prompt))
    print(f"\nworkspace segment: {segment.tokens} tokens, hash {segment.hash}, "
          f"parts: {', '.join(f'{p.name} {p.tokens}' for p in segment.parts)}")

    sample = importlib.resources.files("ctxlayer.samples") / "chat.json"
    chat = parse_chat(sample.read_text(encoding="utf-8"), "the bundled sample chat")
    counter = counter_for(args.model)
    before = conversation_tokens(chat, counter)
    print(f"\n== 2. Trimming the bundled sample chat ({len(chat)} messages, {before} tokens) "
          f"into {args.budget} tokens\n")
    report = trim(chat, args.budget, counter)
    print(f"kept {len(report.messages)} messages, {report.tokens} tokens "
          f"({report.tokens / args.budget:.0%} of the budget)\n")
    for entry in (*report.truncated, *report.dropped):
        print(f"  {entry.action:<12} {entry.message_id or entry.index!s:<8} "
              f"{entry.tokens_before:>6} -> {entry.tokens_after:<6} {entry.reason}")
        print(f"  {'':12} {'':8} {entry.summary}")
    print(f"\nNext: `ctxlayer trim --budget 4k < {_shown(sample)}`, `ctxlayer prompt PATH`, "
          "`ctxlayer serve` (README).")
    return 0
