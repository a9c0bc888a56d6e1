"""`ctxlayer serve`: run the daemon over stdio (default) or TCP on loopback.

Only parses arguments; everything else is in ctxlayer.lsp (imported here, so other commands
never load pygls).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true",
                      help="serve one client on stdin/stdout (the default; editors add it)")
    mode.add_argument("--tcp", action="store_true",
                      help="serve many clients on TCP, each authenticated with the token file")
    # None when not given: given without --tcp they are refused (stdio was served, the port
    # ignored without a word)
    p.add_argument("--host", default=None, help="TCP address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None,
                   help="TCP port (default 7878; 0 picks a free one, printed on stdout)")
    p.add_argument("--token-file", type=Path, default=None,
                   help="TCP token file (default STATE_DIR/token, created 0600 when absent)")
    p.add_argument("--state-dir", type=Path, default=None,
                   help="where the daemon keeps its files (default $CTXLAYER_STATE_DIR, "
                        "else $XDG_STATE_HOME/ctxlayer)")
    p.add_argument("--log-file", default=None, help="log here instead of stderr")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="-v info, -vv debug, -vvv pygls too")


def run(args: argparse.Namespace) -> int:
    from ctxlayer import tokenizers
    from ctxlayer.cli import UsageError
    from ctxlayer.lsp import logs
    from ctxlayer.paths import state_dir as default_state_dir
    from ctxlayer.state import State

    if not args.tcp:
        given = [flag for flag, value in (("--host", args.host), ("--port", args.port),
                                          ("--token-file", args.token_file)) if value is not None]
        if given:
            raise UsageError(f"{', '.join(given)}: only with --tcp (without it the daemon "
                             "serves one client on stdin/stdout)")
    args.host = "127.0.0.1" if args.host is None else args.host
    args.port = 7878 if args.port is None else args.port
    if not 0 <= args.port <= 65535:  # as `ctxlayer gateway` says it; bind() raised OverflowError
        raise UsageError(f"--port {args.port}: expected 0 to 65535")
    try:
        logs.setup(args.verbose, args.log_file)
    except OSError as exc:
        raise UsageError(f"--log-file {args.log_file}: cannot be written ({exc.strerror})") \
            from None
    state_dir = default_state_dir(args.state_dir)  # absolute: a relative one is made so
    tokenizers.set_cache_dir(state_dir / "tokenizers")  # parsed rank tables, built once
    state = State(state_dir)
    state.gateway_starter = GatewayStarter(state)
    if args.tcp:
        from ctxlayer.lsp import tcp
        from ctxlayer.statefiles import make_private_dir, token_file
        from ctxlayer.urls import is_loopback

        if not is_loopback(args.host):  # the token and every conversation cross it in clear
            raise UsageError(f"--host {args.host}: the daemon listens on loopback only "
                             "(127.0.0.1, ::1, localhost)")

        try:  # the token goes into it: 0700 before it is written (an older one was 0755)
            make_private_dir(state_dir)
        except OSError as exc:
            raise UsageError(f"the state folder {state_dir}: cannot be made ({exc.strerror})") \
                from None
        return tcp.run(state, args.host, args.port, args.token_file or token_file(state_dir))
    from ctxlayer.lsp import stdio

    return stdio.run(state)


class GatewayStarter:
    """The HTTP face, started by the first workspace whose config enables it; aiohttp is
    imported only then, so a daemon without a gateway starts as fast as before."""

    def __init__(self, state) -> None:
        self.state = state
        self.gateway = None

    async def __call__(self, caller) -> None:
        config = getattr(caller.policy.config, "gateway", None)
        if config is None or not config.enabled:
            return
        if self.gateway is None:
            from ctxlayer.gateway.daemon import DaemonGateway

            self.gateway = DaemonGateway(self.state)
        await self.gateway(caller)

    async def close(self) -> None:
        """Stop the gateway, if one started (the daemon is ending)."""
        if self.gateway is not None:
            await self.gateway.close()
