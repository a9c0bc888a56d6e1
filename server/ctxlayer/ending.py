"""How a long-running process (the daemon over stdio or TCP, the gateway) runs its event loop
to its end.

Must not: import anything of ours (the daemon's and the gateway's commands both use it).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_to_end(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, its SIGTERM ignored from the moment ``main`` has ended: the
    loop's stop handlers go when it closes, and a SIGTERM then (a supervisor repeating its
    stop until the process is gone) killed the process while its threads were joined, exit
    -15 after a clean stop. Ignored before the loop winds down, not after it closed: closing
    put the default action back for the whole of its close."""
    runner = asyncio.Runner()
    try:
        return runner.run(main)
    finally:
        _ignore_stops(runner)
        runner.close()


def _ignore_stops(runner: asyncio.Runner) -> None:
    """SIGTERM ignored from now on: taken from the loop (which would put the default action
    back as it closes) and ignored at once, the two steps next to each other."""
    try:
        loop = runner.get_loop()
    except RuntimeError:  # the runner never started (a stop before it did) or is closed
        loop = None
    if loop is not None and not loop.is_closed():
        try:
            loop.remove_signal_handler(signal.SIGTERM)
        except (NotImplementedError, RuntimeError):  # Windows; not the main thread
            pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
