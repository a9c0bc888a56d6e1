"""`ctxlayer gateway`: run the OpenAI/Anthropic-compatible HTTP gateway alone.

Only parses arguments and sets up logging (stderr, or a file); the gateway is in
ctxlayer.gateway, imported here so other commands never load aiohttp.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default=None,
                   help="loopback address to listen on (default [gateway] host, 127.0.0.1)")
    p.add_argument("--port", type=int, default=None,
                   help="port (default [gateway] port; 0 picks a free one)")
    p.add_argument("--upstream-openai", default=None, metavar="URL",
                   help="where OpenAI requests go (default [gateway] openai_base_url)")
    p.add_argument("--upstream-anthropic", default=None, metavar="URL",
                   help="where Anthropic requests go (default [gateway] anthropic_base_url)")
    p.add_argument("--state-dir", type=Path, default=None,
                   help="where the sessions are kept (default $CTXLAYER_STATE_DIR, else "
                        "$XDG_STATE_HOME/ctxlayer)")
    p.add_argument("--log-file", default=None, help="log here instead of stderr")
    p.add_argument("-v", "--verbose", action="count", default=0, help="-v info, -vv debug")


def run(args: argparse.Namespace) -> int:
    from ctxlayer.cli import UsageError
    from ctxlayer.ending import run_to_end
    from ctxlayer.gateway import NotLoopback
    from ctxlayer.gateway.standalone import serve
    from ctxlayer.store.paths import state_dir as default_state_dir
    from ctxlayer.urls import said, why_not_upstream

    for flag, url in (("--upstream-openai", args.upstream_openai),
                      ("--upstream-anthropic", args.upstream_anthropic)):
        why = None if url is None else why_not_upstream(url)
        if why is not None:
            raise UsageError(f"{flag} {said(url)}: {why}")
    if args.port is not None and not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: expected 0 to 65535")
    try:
        _logging(args.verbose, args.log_file)
    except OSError as exc:
        raise UsageError(f"--log-file {args.log_file}: cannot be written ({exc.strerror})") \
            from None
    overrides = {"host": args.host, "port": args.port, "openai_base_url": args.upstream_openai,
                 "anthropic_base_url": args.upstream_anthropic}

    def announce(line: dict) -> None:
        print(json.dumps(line), flush=True)

    try:
        run_to_end(serve(Path.cwd().resolve(), default_state_dir(args.state_dir),
                         overrides, announce))
    except NotLoopback as exc:  # the flag's: a ctxlayer.toml's is said and ignored (config)
        raise UsageError(f"--host: {exc}") from None
    except OSError as exc:
        raise UsageError(f"cannot start the gateway: {exc}") from None
    return 0


def _logging(verbosity: int, log_file: str | None) -> None:
    from ctxlayer import loglines

    level = logging.DEBUG if verbosity > 1 else logging.INFO if verbosity else logging.WARNING
    root = logging.getLogger()
    root.handlers[:] = [loglines.handler(log_file)]
    root.setLevel(level)
    if verbosity < 3:  # aiohttp's own loggers stay at warnings
        logging.getLogger("aiohttp").setLevel(logging.WARNING)
