"""The `ctxlayer` command line: argument parsing and error reporting only.

Each subcommand lives in `ctxlayer.commands.<name>` with `add_arguments(parser)` and
`run(args) -> int`, imported only when chosen (so `ctxlayer count` never loads pygls). Bad input
ends with one line on stderr saying what to fix and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ctxlayer import __version__

#: name -> (module under ctxlayer.commands, one-line help). Order is the help's order.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("demo", "show the system prompt of this repo and trim a bundled sample chat"),
    "count": ("count", "count the tokens of a text or a chat (stdin or a file)"),
    "trim": ("trim", "fit a chat (JSON on stdin) into a token budget; the result on stdout"),
    "prompt": ("prompt", "build the layered system prompt for a workspace"),
    "inspect": ("inspect", "scan a workspace and show its segment's parts, tokens and what was left out"),
    "serve": ("serve", "run the daemon (JSON-RPC with LSP framing over stdio or TCP)"),
    "gateway": ("gateway", "run the OpenAI/Anthropic-compatible HTTP gateway on loopback"),
    "chats": ("chats", "the live conversations through the gateway, and why something was cut"),
    "schema": ("schema", "print the JSON Schema of the wire protocol"),
}


#: what `ctxlayer -h` says first (the module docstring is for whoever reads this file)
DESCRIPTION = ("A context engine for LLM chats: counts tokens exactly, fits chats into a budget "
               "with an audit of every cut, builds a workspace's system prompt, and runs as a "
               "daemon (JSON-RPC) or an OpenAI/Anthropic-compatible gateway.")


class UsageError(Exception):
    """Input the user must fix; the message says how."""


class Parser(argparse.ArgumentParser):
    """argparse with its errors in our one line: it printed its whole usage (five lines for
    `trim`) before the error, which then read as one more line of it."""

    #: each command's own parser, by name: an option no command knows is said by the command's
    #: parser (argparse leaves it to the top one, which pointed at `ctxlayer -h`)
    commands: dict[str, argparse.ArgumentParser]

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: {message} (`{self.prog} -h` for the options)\n")


def build_parser() -> Parser:
    parser = Parser(prog="ctxlayer", description=DESCRIPTION,
                    epilog="`ctxlayer COMMAND -h` for a command's options.")
    parser.add_argument("--version", action="version", version=f"ctxlayer {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.commands = {}
    for name, (module, help_text) in COMMANDS.items():
        try:
            command = _command(module)
        except ModuleNotFoundError as exc:  # a command whose optional parts are missing
            if exc.name != f"ctxlayer.commands.{module}":
                raise
            continue
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module)
        command.add_arguments(p)
        parser.commands[name] = p
    return parser


def _command(module: str):
    return importlib.import_module(f"ctxlayer.commands.{module}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        owner = parser.commands.get(getattr(args, "command", None) or "", parser)
        owner.error(f"unrecognized arguments: {' '.join(unknown)}")
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return 2
    from ctxlayer.core.errors import ContextError

    try:
        return _command(args._module).run(args)
    except (UsageError, ContextError) as exc:
        field = getattr(exc, "field", None)
        where = f" (field {field})" if field and field not in str(exc) else ""
        print(f"ctxlayer {args.command}: {exc}{where}", file=sys.stderr)
        return 2
    except RecursionError:  # a value read whole, then walked deeper in the stack
        from ctxlayer.core.errors import TOO_DEEP

        print(f"ctxlayer {args.command}: the input {TOO_DEEP}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
