"""Files of a checkout written from the daemon's own values, each rewritten by one command.

Owns `regenerate`, the command line of `python -m ctxlayer.config` (docs/settings.md),
`python -m ctxlayer.editor_settings` (the VS Code manifest's settings) and `python -m
ctxlayer.editor_secrets` (the extension's copy of the secret rule): --help says what it writes
and writes nothing, --check writes nothing and exits 1 when the file is stale, a file that is
not there (an installed package has no checkout beside it) or that cannot be read as the file
it should be is said in one line, exit 2. A test fails when any of them is stale. Before, two of
them rewrote their file on --help and ended an installed package's run in a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["CHECKOUT", "regenerate"]

#: the repository's top folder, when this package runs from a checkout of it
CHECKOUT = Path(__file__).resolve().parents[2]


def regenerate(argv: list[str] | None, *, module: str, what: str, description: str,
               path: Path, render: Callable[[str], str]) -> int:
    """Run the command of ``module`` rewriting ``path`` (``what`` names the file in messages)
    to ``render`` of its current text; ``render`` raises ValueError, KeyError or TypeError
    when that text is not the file it should be."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when the file is stale")
    parser.add_argument("--file", type=Path, default=path, metavar="PATH",
                        help="the file to rewrite (default: the checkout's, %(default)s)")
    args = parser.parse_args(argv)
    target: Path = args.file

    def refuse(why: str) -> int:
        print(f"python -m {module}: {why}", file=sys.stderr)
        return 2

    try:
        text = target.read_text(encoding="utf-8")
        rendered = render(text)
    except FileNotFoundError:
        return refuse(f"no {what} at {target}: it is written in a checkout of the repository, "
                      "which an installed package does not have")
    except OSError as e:
        return refuse(f"cannot read {target}: {e.strerror or e}")
    except (ValueError, KeyError, TypeError) as e:
        return refuse(f"{target} is no {what}: {e}")
    if rendered == text:
        print(f"{target} is up to date")
        return 0
    if args.check:
        print(f"{target} is stale: run `.venv/bin/python -m {module}` to regenerate it",
              file=sys.stderr)
        return 1
    target.write_text(rendered, encoding="utf-8")
    print(f"wrote {target}")
    return 0
