"""The blocking ctxlayer client: AsyncClient driven on a private event loop thread.

Owns: the loop thread and the blocking wrappers. Subscribers run on that thread, so a
subscriber that calls the client is refused at once (it would wait for an answer that only
its own thread can read).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, Self, TypeVar

from ctxlayer import protocol
from ctxlayer_client.aio import DEFAULT_TIMEOUT, AsyncClient, ConnectionClosed, seconds

T = TypeVar("T")


class Client:
    """Same methods as AsyncClient, blocking. Use `Client.spawn(...)` or `Client.connect(...)`."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="ctxlayer-client",
                                        daemon=True)
        self._thread.start()
        self._client: AsyncClient | None = None
        self.timeout = DEFAULT_TIMEOUT
        self._stopped = False
        self._exit_code: int | None = None  # what close() answered, for a second close()

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        try:
            self._refuse_on_loop_thread()
            if self._stopped:
                # its loop is closed: "Event loop is closed", and the coroutine never awaited
                raise ConnectionClosed("the client is closed")
            # the coroutine carries its own request timeout; this one only guards a stuck loop
            guard = seconds(timeout, self.timeout) + 5
        except (RuntimeError, ValueError, ConnectionClosed):
            coro.close()
            raise
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(guard)
        except BaseException:
            # the caller gave up (Ctrl-C, the guard): the request's task is cancelled, which
            # tells the daemon, or a request still waiting for its session runs and is stored
            future.cancel()
            raise

    def _refuse_on_loop_thread(self) -> None:
        if threading.current_thread() is self._thread:
            # a subscriber runs on the loop thread: blocking it to wait for an answer that
            # only this thread can read would stall every caller until the timeout
            raise RuntimeError(
                "ctxlayer Client: a blocking call from a subscriber (it runs on the client's "
                "loop thread, which reads the answers); hand the work to another thread, or "
                "use AsyncClient with an async def subscriber")

    @property
    def aio(self) -> AsyncClient:
        assert self._client is not None, "not connected"
        return self._client

    @classmethod
    def spawn(cls, cmd: Sequence[str] | None = None, root: str | Path | None = None,
              **kwargs: Any) -> Client:
        client = cls()
        try:
            client.timeout = seconds(kwargs.get("timeout"), DEFAULT_TIMEOUT)
            client._client = client._run(AsyncClient.spawn(cmd, root, **kwargs))
        except BaseException:
            client._stop()
            raise
        return client

    @classmethod
    def connect(cls, host: str, port: int, token: str, root: str | Path | None = None,
                **kwargs: Any) -> Client:
        client = cls()
        try:
            client.timeout = seconds(kwargs.get("timeout"), DEFAULT_TIMEOUT)
            client._client = client._run(AsyncClient.connect(host, port, token, root, **kwargs))
        except BaseException:
            client._stop()
            raise
        return client

    def request(self, method: str, params: Any = None, **kwargs: Any) -> Any:
        return self._run(self.aio.request(method, params, **kwargs), kwargs.get("timeout"))

    def call(self, method: str, params: Any = None, **kwargs: Any) -> Any:
        return self._run(self.aio.call(method, params, **kwargs), kwargs.get("timeout"))

    def notify(self, method: str, params: Any = None) -> None:
        self._run(self.aio.notify(method, params))

    def on(self, method: str, handler: Callable[[Any], Any]) -> Callable[[], None]:
        """Call `handler(params)` for each `method` notification, on the client's loop thread:
        it must return quickly and not call this client (that raises RuntimeError)."""
        return self.aio.on(method, handler)

    def wait_for(self, method: str, predicate: Callable[[Any], bool] | None = None, *,
                 timeout: float | None = None) -> Any:
        return self._run(self.aio.wait_for(method, predicate, timeout=timeout), timeout)

    def segment(self, *, timeout: float | None = None) -> protocol.WorkspaceSegment:
        return self._run(self.aio.segment(timeout=timeout), timeout)

    def system_prompt(self, *, timeout: float | None = None,
                      **params: Any) -> protocol.SystemPromptResult:
        return self._run(self.aio.system_prompt(timeout=timeout, **params), timeout)

    def count(self, texts: Sequence[str] | None = None,
              messages: Sequence[protocol.Message | dict] | None = None,
              model: str | None = None, *, format: protocol.Format = "ctxlayer",
              system: str | list[dict] | None = None,
              timeout: float | None = None) -> protocol.CountResult:
        return self._run(self.aio.count(texts, messages, model, format=format, system=system,
                                        timeout=timeout), timeout)

    def trim(self, messages: Sequence[protocol.Message], *, timeout: float | None = None,
             **params: Any) -> protocol.TrimResult:
        return self._run(self.aio.trim(messages, timeout=timeout, **params), timeout)

    def close(self) -> int | None:
        """shutdown + exit, then the daemon's exit code. Closing again answers the same code
        (a `with` block whose body closed the client closes it again on its way out)."""
        self._refuse_on_loop_thread()  # before stopping the loop the subscriber runs on
        if self._stopped:
            return self._exit_code
        try:
            if self._client is not None:
                self._exit_code = self._run(self.aio.close())
            return self._exit_code
        finally:
            self._stop()

    def _stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._loop.is_running():
            self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
