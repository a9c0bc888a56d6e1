"""Full garbage collections at quiet moments of the event loop.

A full collection walks every tracked object that is not frozen (`tokens.keep_out_of_collections`
froze what lives as long as the process). In a burst of pipelined requests that is thousands
of waiting coroutines and tasks: under 20 clients pipelining 200 appends each, one full
collection held the event loop 13-37 ms in the middle of the burst, and the 21st client's
`ctx/count` p99 was 10-33 ms; with full collections held back, 5-14 ms (`bench/load_bench.py`).

So while a face serves, the young generations are still collected as Python does, and a full
collection, once Python would have made one (its third threshold of young collections), waits
for a moment when the loop has few tasks; under a load that never pauses, it runs at the latest
LONGEST_WAIT seconds after it was due, so garbage cycles are still freed. One holder per running
event loop; the last to let go gives Python its own thresholds back.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from typing import Any

#: seconds between two looks at the loop while a full collection is due
CHECK_EVERY = 0.5
#: the loop's tasks at most for it to count as quiet (a daemon at rest runs a few)
QUIET_TASKS = 64
#: seconds a due full collection waits for a quiet moment at most
LONGEST_WAIT = 30.0
#: a third threshold no count of young collections reaches: Python never starts a full one
_NEVER = 1 << 30

_lock = threading.Lock()
_holders = 0
_every = 10  # Python's third threshold, given back when the last holder lets go
_young = 0  # collections of the middle generation since the last full one
_due_since: float | None = None


def hold() -> None:
    """From a face's event loop, once it serves: full collections wait for quiet moments of
    this loop until `let_go`."""
    global _holders, _every
    loop = asyncio.get_running_loop()
    with _lock:
        if _holders == 0:
            t0, t1, _every = gc.get_threshold()
            gc.set_threshold(t0, t1, _NEVER)
            gc.callbacks.append(_counted)
        _holders += 1
    loop.call_later(CHECK_EVERY, _look, loop)


def let_go() -> None:
    """The face stops serving; the last one gives Python its thresholds back."""
    global _holders
    with _lock:
        if _holders == 0:
            return
        _holders -= 1
        if _holders == 0:
            t0, t1, _ = gc.get_threshold()
            gc.set_threshold(t0, t1, _every)
            gc.callbacks.remove(_counted)


def _counted(phase: str, info: dict[str, Any]) -> None:
    """A collection ended: counts the middle generation's, as Python does for its third
    threshold, and notes when a full one became due."""
    global _young, _due_since
    if phase != "stop":
        return
    if info["generation"] == 2:
        _young, _due_since = 0, None
    elif info["generation"] == 1:
        _young += 1
        if _young >= _every and _due_since is None:
            _due_since = time.monotonic()


def _look(loop: asyncio.AbstractEventLoop) -> None:
    if _holders == 0 or loop.is_closed():
        return
    due = _due_since
    if due is not None and (len(asyncio.all_tasks(loop)) <= QUIET_TASKS
                            or time.monotonic() - due >= LONGEST_WAIT):
        gc.collect()  # its end resets the count (`_counted`)
    loop.call_later(CHECK_EVERY, _look, loop)
