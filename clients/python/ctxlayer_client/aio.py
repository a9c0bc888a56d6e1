"""The asynchronous ctxlayer client: spawn a daemon or connect to one, typed requests.

Owns: the request/response bookkeeping (a timeout on every request), notification
subscriptions, answering the daemon's requests (`window/workDoneProgress/create`, and
`ctx/summarize` when a handler is given), and the initialize/shutdown lifecycle.

Imports only `ctxlayer.protocol`, the standard library and msgspec.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, Self, TypeVar

import msgspec

from ctxlayer import protocol
from ctxlayer.paths import named_absolute
from ctxlayer_client.framing import FramingError, encode, read_message

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0
#: spawn() runs this unless told otherwise
DEFAULT_COMMAND = (sys.executable, "-m", "ctxlayer", "serve", "--stdio")

NotificationHandler = Callable[[Any], Any]
RequestHandler = Callable[[Any], Awaitable[Any] | Any]


class RpcError(Exception):
    """The daemon answered a request with an error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code, self.message, self.data = code, message, data


class ConnectionClosed(Exception):
    """The daemon went away while a request was pending."""


def _uri(path: Path) -> str:
    """The folder as the caller named it, made absolute, its symlinks kept: the daemon resolves
    it itself and reads the agent files on the way the name takes (~/work/AGENTS.md for
    ~/work/proj, ~/work a symlink to another disk), which a resolved name loses."""
    return named_absolute(path).as_uri()


def seconds(timeout: float | None, default: float) -> float:
    """A timeout as given, ``default`` when None. Zero or less would answer every request
    "timed out" before it was sent (and ``timeout or default`` took 0 for "the default"):
    refused, naming it."""
    if timeout is None:
        return default
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ValueError(f"timeout: expected a number of seconds above 0, got {timeout!r}")
    return float(timeout)


def _settle(future: asyncio.Future[Any]) -> None:
    """Forget a request's future once its caller has its outcome. When sending failed, the
    read loop may still fail the future (the daemon died); read that error here, or asyncio
    reports it later as "Future exception was never retrieved"."""
    if not future.done():
        future.cancel()
    elif not future.cancelled():
        future.exception()


class AsyncClient:
    """One connection to a ctxlayer daemon. Use `spawn` or `connect`, then `close`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 process: asyncio.subprocess.Process | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self._reader, self._writer, self.process = reader, writer, process
        self.timeout = seconds(timeout, DEFAULT_TIMEOUT)
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._subscribers: dict[str, list[NotificationHandler]] = {}
        self._request_handlers: dict[str, RequestHandler] = {
            "window/workDoneProgress/create": lambda params: None,
            "client/registerCapability": lambda params: None,
        }
        # the async handlers running now: asyncio keeps only a weak reference to a task
        self._running: set[asyncio.Task[Any]] = set()
        self._closed = False
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self._pump = asyncio.ensure_future(self._read_loop())
        # the end of a spawned daemon's stderr, when spawn() reads it, to say why it exited
        self._stderr_tail = ""
        self._stderr_read: asyncio.Future[None] | None = None

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    async def spawn(cls, cmd: Sequence[str] | None = None, root: str | Path | None = None, *,
                    options: protocol.InitializationOptions | dict | None = None,
                    timeout: float = DEFAULT_TIMEOUT, env: dict[str, str] | None = None,
                    stderr: Any = None, capabilities: dict | None = None) -> AsyncClient:
        """Start `cmd` (default: this Python's `ctxlayer serve --stdio`) and initialize it.

        A daemon that exits before answering initialize raises ConnectionClosed with its exit
        code and last stderr line (read here unless `stderr` says where it goes)."""
        timeout = seconds(timeout, DEFAULT_TIMEOUT)  # refused before a process is started
        argv = list(cmd or DEFAULT_COMMAND)
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=stderr if stderr is not None else asyncio.subprocess.PIPE,
            env={**os.environ, **env} if env else None, limit=1 << 20,
        )
        assert proc.stdout is not None and proc.stdin is not None
        client = cls(proc.stdout, proc.stdin, process=proc, timeout=timeout)  # type: ignore[arg-type]
        if stderr is None and proc.stderr is not None:
            client._stderr_read = asyncio.ensure_future(client._read_stderr(proc.stderr))
        try:
            await client.initialize(root, options=options, capabilities=capabilities)
        except ConnectionClosed as exc:
            why = await client._exit_reason(" before answering initialize")
            await client.close()
            if why is None:
                raise
            raise ConnectionClosed(why) from exc
        except BaseException:
            await client.close()
            raise
        return client

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        """Read the daemon's stderr to its end, keeping the last 4 kB: unread, a daemon that
        logs much would block on a full pipe."""
        while chunk := await stream.read(1 << 16):
            self._stderr_tail = (self._stderr_tail + chunk.decode("utf-8", "replace"))[-4096:]

    async def _exit_reason(self, when: str) -> str | None:
        """'the daemon exited (code 2)<when>: <its last stderr line>', once it has exited
        (waited for briefly: the connection closes a moment before the process ends)."""
        if self.process is None:
            return None
        try:
            code = await asyncio.wait_for(self.process.wait(), 2)
            if self._stderr_read is not None:  # its last words, read to the end
                await asyncio.wait_for(asyncio.shield(self._stderr_read), 1)
        except TimeoutError:
            if self.process.returncode is None:
                return None
            code = self.process.returncode
        how = f"code {code}"
        if code < 0:  # killed by a signal
            with contextlib.suppress(ValueError):
                how = signal.Signals(-code).name
        lines = self._stderr_tail.strip().splitlines()
        return f"the daemon exited ({how}){when}" + (f": {lines[-1].strip()}" if lines else "")

    @classmethod
    async def connect(cls, host: str, port: int, token: str, root: str | Path | None = None, *,
                      options: protocol.InitializationOptions | dict | None = None,
                      timeout: float = DEFAULT_TIMEOUT,
                      capabilities: dict | None = None) -> AsyncClient:
        """Connect to `ctxlayer serve --tcp` and initialize with the token."""
        timeout = seconds(timeout, DEFAULT_TIMEOUT)
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, limit=1 << 20), timeout)
        client = cls(reader, writer, timeout=timeout)
        try:
            await client.initialize(root, options=options, token=token,
                                    capabilities=capabilities)
        except BaseException:
            await client.close()
            raise
        return client

    async def initialize(self, root: str | Path | None, *,
                         options: protocol.InitializationOptions | dict | None = None,
                         token: str | None = None, capabilities: dict | None = None) -> dict:
        opts = msgspec.to_builtins(options) if options is not None else {}
        if token is not None:
            opts = {**opts, "token": token}
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "clientInfo": {"name": "ctxlayer_client"},
            "capabilities": capabilities if capabilities is not None
            else {"window": {"workDoneProgress": True}},
            "initializationOptions": opts,
            "rootUri": None,
        }
        if root is not None:
            path = Path(root)
            params["rootUri"] = _uri(path)
            params["workspaceFolders"] = [{"uri": _uri(path), "name": path.name}]
        result = await self.request("initialize", params)
        self.server_info = result.get("serverInfo") or {}
        self.capabilities = result.get("capabilities") or {}
        await self.notify("initialized", {})
        return result

    # -- the wire ------------------------------------------------------------------------------

    async def _send(self, message: dict) -> None:
        if self._closed:
            raise ConnectionClosed("the connection is closed")
        try:
            self._writer.write(encode(message))
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            # the daemon died while the message was still being written (a large one fills
            # the pipe): the same failure as dying after it, so the same error
            raise ConnectionClosed(f"the daemon closed the connection ({exc!r})") from exc

    def _post(self, message: dict) -> None:
        """Queue `message` without waiting for the daemon to read it (best effort)."""
        if not self._closed:
            with contextlib.suppress(OSError, RuntimeError):
                self._writer.write(encode(message))

    async def notify(self, method: str, params: Any = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = msgspec.to_builtins(params)
        await self._send(msg)

    async def request(self, method: str, params: Any = None, *, timeout: float | None = None,
                      result_type: type[T] | None = None) -> Any:
        """Send a request; its result (converted to `result_type` when given).

        The timeout covers writing the request as well as its answer: a daemon that stopped
        reading its input holds a large request's write as long as it would hold the answer.
        """
        limit = seconds(timeout, self.timeout)
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = msgspec.to_builtins(params)

        async def exchange() -> Any:
            await self._send(msg)
            return await future

        try:
            result = await asyncio.wait_for(exchange(), limit)
        except TimeoutError:
            self._cancel(msg_id)
            raise TimeoutError(f"{method}: no answer within {limit}s") from None
        except asyncio.CancelledError:
            # the caller gave up (its own wait_for, a task cancelled): the daemon is told too,
            # or a request still waiting for its session runs and is stored, and a retry
            # stores it twice
            self._cancel(msg_id)
            raise
        finally:
            self._pending.pop(msg_id, None)
            _settle(future)
        return msgspec.convert(result, result_type) if result_type is not None else result

    def _cancel(self, msg_id: int) -> None:
        """Tell the daemon a request is given up: one still waiting for its session is
        dropped. Not awaited: a daemon that stopped reading would hold the cancel as well."""
        self._post({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}})

    async def call(self, method: str, params: Any = None, *,
                   timeout: float | None = None) -> Any:
        """A ctx/* request typed by protocol.REQUESTS: params struct in, result struct out."""
        if method not in protocol.REQUESTS:  # a bare KeyError said only the name
            raise ValueError(f"{method}: not a request of the ctxlayer protocol (typed calls "
                             "take protocol.REQUESTS; request() sends any method)")
        _, result_type = protocol.REQUESTS[method]
        return await self.request(method, params if params is not None else {},
                                  timeout=timeout, result_type=result_type)

    async def _read_loop(self) -> None:
        try:
            while (msg := await read_message(self._reader)) is not None:
                if isinstance(msg, dict):
                    await self._handle(msg)
        except (FramingError, ConnectionError, OSError) as exc:
            log.warning("ctxlayer connection lost: %s", exc)
        finally:
            self._closed = True
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionClosed("the daemon closed the connection"))

    async def _handle(self, msg: dict) -> None:
        method = msg.get("method")
        if method is None:  # a response
            future = self._pending.get(msg.get("id"))  # type: ignore[arg-type]
            if future is None or future.done():
                # "canceled" (-32800) is the daemon's answer to a request this client gave up
                if (err := msg.get("error")) and err.get("code") != -32800:
                    log.warning("daemon error without a pending request: %s", msg["error"])
                return
            if (err := msg.get("error")) is not None:
                future.set_exception(RpcError(err.get("code", 0), err.get("message", ""),
                                              err.get("data")))
            else:
                future.set_result(msg.get("result"))
        elif "id" in msg:
            self._start(self._answer(msg), msg["method"])
        else:
            self._notified(method, msg.get("params"))

    def _notified(self, method: str, params: Any) -> None:
        if (struct := protocol.NOTIFICATIONS.get(method)) is not None:
            try:
                params = msgspec.convert(params, struct)
            except msgspec.ValidationError:
                log.warning("malformed %s notification: %s", method, params)
        for handler in list(self._subscribers.get(method, ())):
            try:
                outcome = handler(params)
            except Exception:
                log.exception("a %s subscriber failed", method)
                continue
            if asyncio.iscoroutine(outcome):
                # an `async def` subscriber runs in a task of its own, as a request handler
                # does: awaited here it would stop the reading, and one that asks the daemon
                # something would wait for ever for an answer nobody reads
                self._start(outcome, method)

    def _start(self, work: Coroutine[Any, Any, Any], method: str) -> None:
        """Run a handler beside the read loop; keep it until it ends and log its failure."""
        task = asyncio.ensure_future(work)
        self._running.add(task)

        def ended(task: asyncio.Task[Any]) -> None:
            self._running.discard(task)
            if not task.cancelled() and (exc := task.exception()) is not None:
                log.error("a %s handler failed", method, exc_info=exc)

        task.add_done_callback(ended)

    async def _answer(self, msg: dict) -> None:
        handler = self._request_handlers.get(msg["method"])
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
        if handler is None:
            reply["error"] = {"code": -32601, "message": f"unknown method {msg['method']}"}
        else:
            try:
                result = handler(msg.get("params"))
                if asyncio.iscoroutine(result):
                    result = await result
                reply["result"] = msgspec.to_builtins(result)
            except Exception as exc:
                reply["error"] = {"code": -32603, "message": str(exc)}
        with contextlib.suppress(ConnectionClosed, OSError):
            await self._send(reply)

    # -- subscriptions -------------------------------------------------------------------------

    def on(self, method: str, handler: NotificationHandler) -> Callable[[], None]:
        """Call `handler(params)` for each `method` notification; returns the unsubscriber.

        Params of ctxlayer notifications arrive as their protocol struct (SegmentChanged...).
        An `async def` handler runs in a task of its own, so it may send requests.
        """
        self._subscribers.setdefault(method, []).append(handler)

        def unsubscribe() -> None:  # once or again: a second call has nothing left to do
            with contextlib.suppress(ValueError):
                self._subscribers.get(method, []).remove(handler)

        return unsubscribe

    async def wait_for(self, method: str, predicate: Callable[[Any], bool] | None = None, *,
                       timeout: float | None = None) -> Any:
        """The params of the next `method` notification matching `predicate`."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def handler(params: Any) -> None:
            if not future.done() and (predicate is None or predicate(params)):
                future.set_result(params)

        limit = seconds(timeout, self.timeout)
        off = self.on(method, handler)
        try:
            return await asyncio.wait_for(future, limit)
        except TimeoutError:
            # it said nothing (an empty message) of what it waited for
            raise TimeoutError(f"{method}: no such notification within {limit}s") from None
        finally:
            off()

    def on_request(self, method: str, handler: RequestHandler) -> None:
        """Answer the daemon's `method` requests (e.g. ctx/summarize) with `handler(params)`."""
        self._request_handlers[method] = handler

    # -- typed methods ---------------------------------------------------------------------------

    # Each takes `timeout=` (seconds), as request() does: a slow request (a long trim) can be
    # given longer than the client's default, a quick one less.

    async def segment(self, *, timeout: float | None = None) -> protocol.WorkspaceSegment:
        return await self.call("ctx/segment", {}, timeout=timeout)

    async def system_prompt(self, *, timeout: float | None = None,
                            **params: Any) -> protocol.SystemPromptResult:
        return await self.call("ctx/systemPrompt", protocol.SystemPromptParams(**params),
                               timeout=timeout)

    async def count(self, texts: Sequence[str] | None = None,
                    messages: Sequence[protocol.Message | dict] | None = None,
                    model: str | None = None, *, format: protocol.Format = "ctxlayer",
                    system: str | list[dict] | None = None,
                    timeout: float | None = None) -> protocol.CountResult:
        """Tokens of each text and message; `messages` in `format` (a provider's own, as trim
        takes them), with that format's `system` (anthropic) or instructions (responses)."""
        return await self.call("ctx/count", protocol.CountParams(
            texts=list(texts) if texts is not None else None,
            messages=list(messages) if messages is not None else None, model=model,
            format=format, system=system), timeout=timeout)

    async def trim(self, messages: Sequence[protocol.Message], *, timeout: float | None = None,
                   **params: Any) -> protocol.TrimResult:
        result = await self.call("ctx/trim", protocol.TrimParams(messages=list(messages), **params),
                                 timeout=timeout)
        if params.get("format", "ctxlayer") == "ctxlayer":  # typed messages back, as sent
            result.messages = msgspec.convert(result.messages, list[protocol.Message])
        return result

    # -- closing -------------------------------------------------------------------------------

    async def close(self, timeout: float = 5.0) -> int | None:
        """shutdown + exit, then wait for the process (killed after `timeout`)."""
        timeout = min(timeout, self.timeout)
        if not self._closed:
            with contextlib.suppress(Exception):
                await self.request("shutdown", None, timeout=timeout)
            with contextlib.suppress(Exception):  # bounded: the daemon may not be reading
                await asyncio.wait_for(self.notify("exit"), timeout)
        self._closed = True
        with contextlib.suppress(Exception):
            self._writer.close()
        code = None
        if self.process is not None:
            try:
                code = await asyncio.wait_for(self.process.wait(), timeout)
            except TimeoutError:
                self.process.kill()
                code = await self.process.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._pump, timeout)
        if self._stderr_read is not None:  # a process it started may still hold stderr open
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._stderr_read, min(timeout, 1))
        return code

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
