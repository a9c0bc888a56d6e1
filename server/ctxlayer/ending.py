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
    """``asyncio.run(main)``, its SIGTERM ignored once the loop has closed: the loop's stop
    handlers go with it, and a SIGTERM then (a supervisor repeating its stop until the
    process is gone) killed the process while its threads were joined, exit -15 after a
    clean stop."""
    try:
        return asyncio.run(main)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
