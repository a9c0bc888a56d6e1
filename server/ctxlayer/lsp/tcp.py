"""Serving many clients over TCP on loopback, each authenticated with a token.

Owns: our own accept loop (pygls' start_tcp serves one client and exits), one CtxServer per
connection sharing the Daemon, and the handshake (the token file is statefiles.py's, shared
with the gateway's `/ctxlayer/*` routes: created 0600 when absent, refused when group or
others can read it):

    The first message on a connection must be the `initialize` request, with
    `initializationOptions.token` equal to the token file's content (surrounding whitespace
    ignored). Anything else is answered with error -32004 ("unauthorized: ...") and the
    connection is closed. A connection that sends nothing for 30 s is closed.

On start it prints one JSON line on stdout: {"host", "port", "tokenFile", "pid"} (stdout is not
the JSON-RPC channel in this mode), so `--port 0` can be used.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import signal
import sys
from pathlib import Path

from ctxlayer.ending import run_to_end
from ctxlayer.lsp.dispatch import register_all
from ctxlayer.lsp.logs import client_logs
from ctxlayer.lsp.server import CtxServer
from ctxlayer.lsp.transport import LINE_LIMIT, Connection
from ctxlayer.state import State
from ctxlayer.statefiles import TokenFileError, read_or_create_token

log = logging.getLogger(__name__)

#: seconds a new connection has to send its `initialize`
AUTH_TIMEOUT = 30.0


def authenticator(token: str):
    expected = token.encode()

    def check(msg: dict) -> str | None:
        if msg.get("method") != "initialize" or "id" not in msg:
            return "the first message must be the initialize request"
        params = msg.get("params")
        options = params.get("initializationOptions") if isinstance(params, dict) else None
        given = options.get("token") if isinstance(options, dict) else None
        if not isinstance(given, str):
            return "initializationOptions.token is missing"
        if not hmac.compare_digest(given.strip().encode(), expected):
            return "wrong token"
        del options["token"]
        return None

    return check


async def serve(state: State, host: str, port: int, token: str, token_file: Path) -> int:
    loop = asyncio.get_running_loop()
    check = authenticator(token)
    client_logs.loop = loop
    stopping = loop.create_future()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        log.info("connection from %s", peer)
        server = CtxServer(state, on_end=lambda code: writer.close())
        register_all(server)
        conn = Connection(server, reader, writer, authenticate=check)
        try:
            first = await asyncio.wait_for(conn.read_frame(), AUTH_TIMEOUT)
            if first is not None:
                conn.dispatch(first)
            if conn.authenticate is None:  # accepted
                client_logs.servers.add(server)
                await conn.run()
            else:
                await writer.drain()
        except TimeoutError:
            log.info("connection from %s sent no initialize within %ss", peer, AUTH_TIMEOUT)
        except (ConnectionError, OSError) as exc:
            log.info("connection from %s lost: %s", peer, exc)
        except Exception:
            log.exception("connection from %s failed", peer)
        finally:
            client_logs.servers.discard(server)
            server.end(1)
            writer.close()
            log.info("connection from %s closed", peer)

    state.serving()
    try:
        tcp = await asyncio.start_server(connection, host, port, limit=LINE_LIMIT)
    except OSError as exc:  # a port in use: one line, as `ctxlayer gateway` says it
        state.close()
        print(f"ctxlayer serve: cannot start the daemon: {exc}", file=sys.stderr)
        return 2
    # before it is announced: a stop asked as soon as it is (a supervisor, a test) killed the
    # process by the default action, exit -15, where it ends cleanly from here on
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: stopping.done() or stopping.set_result(0))
    bound = tcp.sockets[0].getsockname()
    print(json.dumps({"host": bound[0], "port": bound[1], "tokenFile": str(token_file),
                      "pid": os.getpid()}), flush=True)
    log.info("listening on %s:%s", bound[0], bound[1])
    try:
        async with tcp:
            await stopping
    finally:
        await state.stop_gateway()
        state.close()
    return 0


def run(state: State, host: str, port: int, token_file: Path) -> int:
    try:
        token = read_or_create_token(token_file)
    except (TokenFileError, OSError) as exc:
        print(f"ctxlayer serve: {exc}", file=sys.stderr)
        return 2
    return run_to_end(serve(state, host, port, token, token_file))
