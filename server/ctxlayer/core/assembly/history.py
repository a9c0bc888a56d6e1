"""A session's chat history held in memory with its token counts and prefix sums.

Appending costs one count of the new message; the tokens of any range cost two lookups, so an
assembly never re-counts or re-reads a long session. Seqs are the store's per-session message
numbers: increasing, not necessarily dense.
Must not: read or write storage (the store loads and the service appends).
"""

from __future__ import annotations

from bisect import bisect_left

from ctxlayer.protocol import Message


class History:
    """Messages in conversation order with ``seqs``, per-message ``tokens`` and prefix sums."""

    __slots__ = ("ids", "messages", "seqs", "tokens", "_cum")

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.seqs: list[int] = []
        self.tokens: list[int] = []
        self._cum: list[int] = [0]
        #: id -> position: one id names one message (ctx/restore and ctx/why find it by it)
        self.ids: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.messages)

    def append(self, message: Message, seq: int, tokens: int) -> None:
        if self.seqs and seq <= self.seqs[-1]:
            raise ValueError(f"seq {seq} is not after {self.seqs[-1]}")
        self.messages.append(message)
        if message.id is not None:
            self.ids[message.id] = len(self.messages) - 1
        self.seqs.append(seq)
        self.tokens.append(tokens)
        self._cum.append(self._cum[-1] + tokens)

    def tokens_between(self, start: int, stop: int) -> int:
        """Tokens of messages[start:stop]."""
        return self._cum[stop] - self._cum[start]

    @property
    def total(self) -> int:
        return self._cum[-1]

    def index_of_seq(self, seq: int) -> int:
        """Index of the first message whose seq is >= ``seq`` (len when none)."""
        return bisect_left(self.seqs, seq)

    def latest_user_text(self) -> str:
        for msg in reversed(self.messages):
            if msg.role == "user":
                return msg.content
        return ""
