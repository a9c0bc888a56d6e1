"""A session's chat history held in memory with its token counts and prefix sums.

Appending costs one count of the new message; the tokens of any range cost two lookups, so an
assembly never re-counts or re-reads a long session. Seqs are the store's per-session message
numbers: increasing, not necessarily dense.
Must not: read or write storage (the store loads and the service appends).
"""

from __future__ import annotations

from bisect import bisect_left

from ctxlayer.protocol import Message


def kept_whole(msg: Message) -> bool:
    """A message no compaction stage shortens and no summary replaces: the client's own system
    instructions (its system prompt, OpenAI's `developer` message: REQUIREMENTS T5/T6, P0)
    and what it pinned (T3/T4). A summary kept none of their wording, and an instruction
    paraphrased is an instruction lost."""
    return msg.role == "system" or msg.pinned


class History:
    """Messages in conversation order with ``seqs``, per-message ``tokens`` and prefix sums."""

    __slots__ = ("ids", "messages", "seqs", "tokens", "whole", "_cum")

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.seqs: list[int] = []
        self.tokens: list[int] = []
        self._cum: list[int] = [0]
        #: id -> position: one id names one message (ctx/restore and ctx/why find it by it)
        self.ids: dict[str, int] = {}
        #: positions of the messages kept whole (`kept_whole`), in order: an assembly finds
        #: those before its summary without reading the whole history
        self.whole: list[int] = []

    def __len__(self) -> int:
        return len(self.messages)

    def append(self, message: Message, seq: int, tokens: int) -> None:
        if self.seqs and seq <= self.seqs[-1]:
            raise ValueError(f"seq {seq} is not after {self.seqs[-1]}")
        self.messages.append(message)
        if message.id is not None:
            self.ids[message.id] = len(self.messages) - 1
        if kept_whole(message):
            self.whole.append(len(self.messages) - 1)
        self.seqs.append(seq)
        self.tokens.append(tokens)
        self._cum.append(self._cum[-1] + tokens)

    def head(self, n: int) -> History:
        """A new history of this one's first ``n`` messages."""
        out = History()
        out.messages, out.seqs, out.tokens = self.messages[:n], self.seqs[:n], self.tokens[:n]
        out._cum = self._cum[:n + 1]
        out.ids = {i: k for i, k in self.ids.items() if k < n} if n < len(self) \
            else dict(self.ids)
        out.whole = [k for k in self.whole if k < n]
        return out

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
