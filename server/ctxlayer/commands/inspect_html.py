"""`ctxlayer inspect --html`: the budget inspector page for a workspace, written to a file or
stdout, for browsers (Neovim's `:Ctxlayer inspect` opens it). The page shows the layered
system prompt of the workspace, plus a chat when one is given (`--chat FILE`), trimmed into
the budget by the real engine. Owns argument handling and file output only; the page is
rendered by `ctxlayer.inspector`.
"""

from __future__ import annotations

import sys
from pathlib import Path


def add_arguments(parser) -> None:
    from ctxlayer.commands.io import positive

    parser.add_argument("--html", action="store_true",
                        help="write the budget inspector page (self-contained HTML)")
    parser.add_argument("--chat", default=None,
                        help="with --html: a JSON list of messages to show after the system prompt")
    parser.add_argument("--budget", type=positive, default=None,
                        help="with --html: token budget (default: the model's window minus its "
                             "output allowance)")
    parser.add_argument("--out", default=None, help="with --html: write to this file, not stdout")


def run_html(args) -> int:
    from ctxlayer.cli import UsageError
    from ctxlayer.commands.io import parse_chat, read_input
    from ctxlayer.commands.prompt import build
    from ctxlayer.inspector import inspect_conversation, render_inspector
    from ctxlayer.tokenizers import counter_for, model_info

    prompt, _segment = build(Path(args.path).expanduser(), args.model)
    chat = parse_chat(read_input(args.chat), args.chat) if args.chat else []
    info = model_info(args.model)
    budget = args.budget or info.default_budget
    data = inspect_conversation(
        [*prompt.messages, *chat], budget, counter_for(args.model),
        model=args.model or info.name, window=max(info.context_window, budget),
        title=f"ctxlayer · {Path(args.path).expanduser().resolve().name}",
        cache_boundary=prompt.cache_boundary,
    )
    html = render_inspector(data)
    if args.out:
        try:
            Path(args.out).write_text(html, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--out {args.out}: cannot write it ({exc})") from None
        print(args.out)
    else:
        sys.stdout.write(html)
    return 0
