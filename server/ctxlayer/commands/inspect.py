"""`ctxlayer inspect PATH`: scan a workspace and print its segment as a table.

Parts with tokens and hash, then what was left out and why (`--text` adds the segment's text,
`--json` prints the WorkspaceSegment as on the wire). Config problems go to stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec


def add_arguments(parser) -> None:
    parser.add_argument("path", nargs="?", default=".", help="workspace folder (default: .)")
    parser.add_argument("--model", default=None,
                        help="model whose tokenizer counts (default: the --chat body's model, "
                        "else gpt-4o)")
    parser.add_argument("--text", action="store_true", help="also print the segment's text")
    parser.add_argument("--json", action="store_true", help="print the segment as JSON")
    from ctxlayer.commands import inspect_html

    inspect_html.add_arguments(parser)


def run(args) -> int:
    from ctxlayer.cli import UsageError
    from ctxlayer.config import default_user_config_dir, load_config
    from ctxlayer.paths import named_absolute
    from ctxlayer.tokenizers import counter_for
    from ctxlayer.workspace import Workspace, render_inspect

    root = Path(args.path).expanduser()
    if not root.is_dir():
        raise UsageError(f"{args.path}: not a folder")
    # a flag of the other output was ignored without a word (`--chat F` printed the table)
    page_only = [f for f, v in (("--chat", args.chat), ("--budget", args.budget),
                                ("--out", args.out)) if v is not None]
    if page_only and not args.html:
        raise UsageError(f"{', '.join(page_only)}: for the budget inspector page; add --html")
    table_only = [f for f, v in (("--text", args.text), ("--json", args.json)) if v]
    if table_only and args.html:
        raise UsageError(f"{', '.join(table_only)}: not with --html, which writes the page")
    if args.html:
        from ctxlayer.commands.inspect_html import run_html

        return run_html(args)
    config, problems = load_config(root, default_user_config_dir(), None)
    for problem in problems:
        print(f"ctxlayer inspect: config: {problem}", file=sys.stderr)
    # the folder as named too, as `ctxlayer prompt` and the daemon read it: ~/work/AGENTS.md
    # for ~/work/proj, ~/work a symlink
    segment = Workspace(root.resolve(), config, counter_for(args.model).count,
                        opened_as=named_absolute(root)).scan()
    if args.json:
        sys.stdout.write(msgspec.json.encode(segment).decode() + "\n")
        return 0
    sys.stdout.write(render_inspect(segment))
    if args.text:
        sys.stdout.write("\n" + segment.text + "\n")
    return 0
