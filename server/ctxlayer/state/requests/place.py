"""Where a request runs: the one module that moves work off the event loop.

Owns the three places of the requests table and the two ways work and the loop meet:
- `loop`: an `async def` awaited on the event loop; it awaits only what the loop gives (the
  workspace scan, an event) and does no heavy work;
- `worker`: a plain `def` on a thread of the default pool (counts, trims, prompts);
- `lane`: a plain `def` on a session thread (the session service, the database), inside its
  lane, so a session's requests apply in arrival order.
What only the loop can give is awaited before the function runs and passed in (`given`: the
workspace segment after its first scan, a live conversation's part). The client's summary,
which the core may ask for half-way through an assembly, is an `Ask` the function returns:
the dispatcher awaits the client on the loop, then runs `then(text)` in the same place.
What a function on a thread tells the editors goes back through `on_loop` (budgets.publish).
Must not: know any request (the table in `__init__.py` says which runs where).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:
    from ctxlayer.state.caller import Caller

log = logging.getLogger(__name__)

Runs = Literal["loop", "worker", "lane"]

#: the loop of the request a thread works for (set by `run`, copied into the thread's context)
_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop] = contextvars.ContextVar("ctx_loop")


class Ask(NamedTuple):
    """A function on a thread needs the client's summary of `summary` (a SummarizeRequest of
    the core) to go on; `then(text or None)` goes on, in the same place."""

    summary: Any
    then: Callable[[str | None], Any]


async def run(caller: Caller, runs: Runs, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` in its place, then every `Ask` it returns answered on the loop."""
    out = await _placed(caller, runs, fn, *args)
    while isinstance(out, Ask):
        text = await ask_summary(caller, out.summary)
        out = await _placed(caller, runs, out.then, text)
    return out


async def _placed(caller: Caller, runs: Runs, fn: Callable[..., Any], *args: Any) -> Any:
    loop = asyncio.get_running_loop()
    _LOOP.set(loop)
    context, left = contextvars.copy_context(), _Left()
    context.run(_LEFT.set, left)
    work = functools.partial(context.run, fn, *args)
    try:
        if runs == "lane":
            _ = caller.state.sessions  # opened on the loop (what it tells the user goes out from here)
            return await _to_its_end(asyncio.ensure_future(caller.state.work(work)))
        return await _to_its_end(loop.run_in_executor(None, work))
    finally:
        for call in left.take():  # what the work told the editors, before its answer
            try:
                call()
            except Exception:
                log.exception("a call the work left for the loop failed")


async def _to_its_end(work: asyncio.Future[Any]) -> Any:
    """The result of work handed to a thread, even when its request is cancelled meanwhile
    ($/cancelRequest, a client's timeout): a thread cannot be stopped, and an append answered
    "canceled" that the session had stored was stored twice by the client's retry. So a
    request cancelled once its work is under way answers what it did, and holds its lane
    until then: the next request on the session never runs beside it. Cancelled before (while
    it waited for its lane), it changed nothing and says so."""
    cancelled = False
    while True:
        try:
            out = await asyncio.shield(work)
            break
        except asyncio.CancelledError:
            if work.cancelled():
                raise
            cancelled = True
    task = asyncio.current_task()
    if cancelled and task is not None:
        task.uncancel()  # the request goes on to its answer
    return out


class _Left:
    """What the work of a request on a thread leaves for the loop, done once the work is: one
    wake-up of the loop fewer than a call of its own (waking the loop took 19% of a session
    thread's time under 20 clients' appends). After `take` (the work done, or its request
    cancelled while the thread goes on), a call is the loop's next thing again."""

    __slots__ = ("calls", "lock", "taken")

    def __init__(self) -> None:
        self.calls: list[Callable[[], Any]] = []
        self.lock = threading.Lock()
        self.taken = False

    def add(self, call: Callable[[], Any]) -> bool:
        with self.lock:
            if not self.taken:
                self.calls.append(call)
            return not self.taken

    def take(self) -> list[Callable[[], Any]]:
        with self.lock:
            self.taken = True
            calls, self.calls = self.calls, []
        return calls


#: the `_Left` of the request whose work a thread runs (set by `_placed` in the work's context)
_LEFT: contextvars.ContextVar[_Left] = contextvars.ContextVar("ctx_left")


def on_loop(fn: Callable[..., Any], *args: Any) -> None:
    """Call `fn(*args)` on the event loop: directly from the loop; from the work of a request on
    a thread, once that work is done and before its answer (`_Left`); from any other thread, as
    the next thing the loop does."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        left = _LEFT.get(None)
        if left is None or not left.add(functools.partial(fn, *args)):
            _LOOP.get().call_soon_threadsafe(fn, *args)
        return
    fn(*args)


async def ask_summary(caller: Caller, request: Any) -> str | None:
    """The caller's summary, or None when it fails or is slower than the timeout (the offline
    summary is used then, so a turn never waits longer than `[session] summarizer_timeout`)."""
    from ctxlayer import protocol

    if caller.summarize is None:
        return None
    params = protocol.SummarizeParams(messages=request.messages,
                                      instructions=request.instructions,
                                      max_tokens=request.max_tokens)
    timeout = caller.policy.summarizer_timeout
    try:
        text = await asyncio.wait_for(caller.summarize(params), timeout)
        return text if text and text.strip() else None
    except TimeoutError:
        log.warning("ctx/summarize: no answer within %.1f s; offline summary used", timeout)
    except Exception as exc:
        log.warning("ctx/summarize failed (%s); offline summary used", exc)
    return None


async def segment(caller: Caller, p: Any) -> Any:
    """`given` of the requests that measure a session's layers: the workspace segment."""
    return await caller.segment()
