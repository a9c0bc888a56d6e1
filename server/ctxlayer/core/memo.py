"""A bounded memo of derived text facts (normalised hashes, truncations, compressions), keyed
by function and content, so that a warm re-trim derives nothing it derived before.

Like the count cache it is injected by the caller (the daemon keeps one per tokenizer); the
core holds no global state.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any


class Memo:
    __slots__ = ("max_entries", "_data")

    def __init__(self, max_entries: int = 50_000) -> None:
        self.max_entries = max_entries
        self._data: OrderedDict[tuple[str, Any], Any] = OrderedDict()

    def get(self, kind: str, key: Any, compute: Callable[[], Any]) -> Any:
        k = (kind, key)
        data = self._data
        try:
            value = data[k]
        except KeyError:
            value = data[k] = compute()
            if len(data) > self.max_entries:
                data.popitem(last=False)
            return value
        data.move_to_end(k)
        return value

    def peek(self, kind: str, key: Any) -> Any:
        """The value kept for (kind, key), or None; nothing is computed."""
        return self._data.get((kind, key))

    def __len__(self) -> int:
        return len(self._data)
