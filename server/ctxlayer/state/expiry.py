"""What the state folder forgets, so that it does not grow for ever: a workspace's audit
entries and the windows of its live conversations (their summaries, outlines, counts) that are
older than its `[session] keep_days` (a 10% budget's audit alone came to 40% of the size of the
chats it cut, a window to tens of KB a chat). Removed on the keeping thread, never on a
request's path: when the session database opens (for every workspace configured by then), when a
workspace is configured, and after that at most once a day per workspace, on its next turn.

A session's messages, rules and working items are never removed, nor its row (a few hundred
bytes). A conversation whose window was removed starts afresh on its next request after a
restart. SQLite reuses the freed pages: the file stops growing, it does not shrink.
Must not: block the caller (`due` only decides; the state queues the removal).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

#: seconds between two removals for one workspace
EVERY = 86_400.0


def cutoff(keep_days: int, now: datetime | None = None) -> str:
    """The time before which rows go, as the rows write theirs (ISO, UTC, milliseconds)."""
    now = now if now is not None else datetime.now(UTC)
    return (now - timedelta(days=keep_days)).isoformat(timespec="milliseconds")


class Expiry:
    """When each workspace is next due to forget."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last: dict[str, float] = {}

    def due(self, workspace: str) -> bool:
        """Whether the workspace forgets now (and, if so, not again for a day)."""
        now, last = self._clock(), self._last.get(workspace)
        if last is not None and now - last < EVERY:
            return False
        self._last[workspace] = now
        return True

    def reset(self, workspace: str) -> None:
        """Its configuration changed: it is due at once."""
        self._last.pop(workspace, None)
