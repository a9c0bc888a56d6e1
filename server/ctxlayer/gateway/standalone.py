"""`ctxlayer gateway`: the gateway alone, for one workspace, until it is stopped.

Owns: making the process's State and the gateway's Caller for the workspace (its
configuration; no live segment), applying the command line over `[gateway]`, announcing the
URLs once listening, and stopping cleanly on SIGINT / SIGTERM. Must not print anything but
the announcement on stdout (logs go to stderr).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from ctxlayer.config import GatewayConfig, default_user_config_dir, load_config
from ctxlayer.gateway.server import GatewayServer, check_loopback, start_gateway
from ctxlayer.state import Caller, State
from ctxlayer.state.opening import open_settings

log = logging.getLogger("ctxlayer.gateway")


def gateway_config(base: GatewayConfig, overrides: dict[str, Any]) -> GatewayConfig:
    """`[gateway]` with the command line's values (those given) over it; NotLoopback for a
    `--host` other machines could reach (a settings file's is reported and ignored when it
    is read: config.NOT_LOOPBACK)."""
    given = {k: v for k, v in overrides.items() if v is not None}
    config = msgspec.structs.replace(base, **given)
    check_loopback(config.host)
    return config


async def open_caller(state: State, root: Path) -> Caller:
    """The gateway's caller: the workspace's configuration, read once (a change applies from
    the next start, as the command line's and `[gateway]`'s do). Its workspace is neither
    scanned nor watched: the gateway shows no workspace segment, and in a 50k-file repository
    watching it cost 53 MB and 130 ms of the gateway's processor per file an agent saved."""
    caller = Caller(state, source="gateway")
    caller.root = root
    config, problems = load_config(root, default_user_config_dir())
    for problem in problems:
        log.warning("%s", problem)
    caller.config = config
    open_settings(caller, config)
    return caller


async def serve(root: Path, state_dir: Path, overrides: dict[str, Any],
                announce: Callable[[dict[str, Any]], None]) -> None:
    """Serve until SIGINT or SIGTERM; `announce` gets the JSON line once listening."""
    state = State(state_dir)
    state.serving()
    server: GatewayServer | None = None
    try:
        caller = await open_caller(state, root)
        config = gateway_config(caller.config.gateway, overrides)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        # before it is announced: a stop asked as soon as it is (a supervisor, a test) ended
        # the process at once, its announcement left behind naming a port nothing served
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):  # not on Windows
                loop.add_signal_handler(sig, stop.set)
        server = await start_gateway(state, caller, config)
        urls = server.urls
        announce({"host": server.host, "port": server.port, "openai": urls.openai,
                  "anthropic": urls.anthropic, "pid": os.getpid()})
        await stop.wait()
    finally:
        if server is not None:
            await server.close()
        await state.work(state.close)
