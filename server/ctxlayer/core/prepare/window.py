"""The window of a live conversation in one turn: which messages are shown whole, which stand
in a summary, and the compaction step that moves the boundary by a chunk.

`Window` is the turn's working copy of the state's lists (the state itself is never changed).
Groups: an assistant message with tool calls and the tool results right after it are one
group; the boundary never falls inside one, so no result is shown without its call.
Must not: decide when a turn steps (engine.py does) or shorten a message (the trim engine
does, as a last resort).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ctxlayer.core.prepare import summaries
from ctxlayer.core.prepare.model import Chunk, PreparePolicy
from ctxlayer.core.tokens import Tokenizer
from ctxlayer.protocol import AuditEntry, Message


def is_result(m: Message) -> bool:
    return m.role == "tool" or m.tool_call_id is not None


def group_end(messages: list[Message], j: int) -> int:
    """End (exclusive) of the group that starts at j."""
    e, n = j + 1, len(messages)
    while e < n and is_result(messages[e]):
        e += 1
    return e


def group_of(messages: list[Message], i: int) -> range:
    s = i
    while s > 0 and is_result(messages[s]):
        s -= 1
    return range(s, group_end(messages, s))


def newest_user(messages: list[Message]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == "user" and not is_result(m):
            return i
    return -1


class Window:
    """The turn's view: head + chunks + verbatim + messages[upto:], with rewrites applied."""

    __slots__ = ("messages", "tokens", "cum", "head", "upto", "chunks", "verbatim", "rewrites",
                 "fmt_priming")

    def __init__(self, messages: list[Message], tokens: list[int], cum: list[int], head: int,
                 upto: int, chunks: list[Chunk], verbatim: list[int],
                 rewrites: dict[int, tuple[str, int, AuditEntry]], priming: int) -> None:
        self.messages, self.tokens, self.cum = messages, tokens, cum
        self.head, self.upto, self.chunks, self.verbatim = head, upto, chunks, verbatim
        self.rewrites = rewrites
        self.fmt_priming = priming

    def shown_tokens(self, i: int) -> int:
        rw = self.rewrites.get(i)
        return self.tokens[i] if rw is None else rw[1]

    def shown(self, i: int) -> Message:
        rw = self.rewrites.get(i)
        m = self.messages[i]
        if rw is None:
            return m
        return msgspec.structs.replace(m, content=rw[0])

    def tail_tokens(self) -> int:
        n, upto = len(self.messages), self.upto
        delta = sum(rw[1] - self.tokens[i] for i, rw in self.rewrites.items() if i >= upto)
        return self.cum[n] - self.cum[upto] + delta

    def fixed_tokens(self) -> int:
        """Everything but the tail: priming, head, chunks, verbatim messages."""
        return (self.fmt_priming + self.cum[self.head] + sum(c.tokens for c in self.chunks)
                + sum(self.shown_tokens(i) for i in self.verbatim))

    def total(self) -> int:
        return self.fixed_tokens() + self.tail_tokens()

    def show_whole(self, i: int) -> list[int]:
        """Put the group of summarized message i back in the result, whole; returns the indices
        newly shown (empty when it was shown already or is in the tail)."""
        if i < self.head or i >= self.upto or i in self.verbatim:
            for k in group_of(self.messages, i):
                self.rewrites.pop(k, None)
            return []
        grp = [k for k in group_of(self.messages, i) if k not in self.verbatim]
        for k in grp:
            self.rewrites.pop(k, None)
        self.verbatim = sorted({*self.verbatim, *grp})
        return grp

    # --- the compaction step ----------------------------------------------------------------

    def step(self, budget: int, counter: Tokenizer, policy: PreparePolicy,
             keep: Callable[[int], bool]) -> Chunk | None:
        """Summarize the oldest verbatim messages, group by group, until the request is down to
        ``target`` of the budget (or only the last group is left); messages that ``keep``
        says stay whole (pinned, restored, the newest user message) are shown after the
        summaries instead. Returns the new chunk, or None when nothing could be summarized."""
        msgs, n = self.messages, len(self.messages)
        stop = n - 1
        while stop > self.upto and is_result(msgs[stop]):
            stop -= 1  # the last group always stays verbatim
        if stop <= self.upto:
            return None
        stay: set[int] = set()
        for i in self.verbatim:
            if keep(i):
                stay.update(group_of(msgs, i))
        stay &= set(self.verbatim)
        covered = [i for i in self.verbatim if i not in stay]
        # summaries are sized to the room the system prompt and the question leave: a chat
        # whose system prompt and task take most of the budget gets smaller summaries, not
        # summaries that crowd out the turn the model answers
        q = newest_user(msgs)
        room = budget - self.fmt_priming - self.cum[self.head] - (
            self.shown_tokens(q) if q >= self.head else 0)
        room = max(room, budget // 4)
        # the last chunk's size is the best guess of the next one's
        est = self.chunks[-1].tokens if self.chunks else summaries.estimate(policy, room)
        fixed = (self.fmt_priming + self.cum[self.head] + sum(c.tokens for c in self.chunks)
                 + sum(self.shown_tokens(i) for i in stay))
        tail = self.tail_tokens()
        target = int(budget * policy.target)
        j, kept_whole = self.upto, sorted(stay)
        chunk: Chunk | None = None
        for _ in range(4):
            while j < stop and fixed + est + tail > target:
                e = group_end(msgs, j)
                grp = range(j, e)
                cost = sum(self.shown_tokens(k) for k in grp)
                tail -= cost
                if any(keep(k) for k in grp):
                    kept_whole.extend(grp)
                    fixed += cost
                else:
                    covered.extend(grp)
                j = e
            if not covered:
                return None
            covered.sort()
            chunk = summaries.make_chunk(
                [self.shown(i) for i in covered], [msgs[i] for i in covered], covered,
                [self.shown_tokens(i) for i in covered], self.upto, j, counter, policy, room)
            if fixed + chunk.tokens + tail <= budget or j >= stop:
                break
            est = chunk.tokens  # the summary came out bigger than expected: walk on
        assert chunk is not None
        for i in covered:
            self.rewrites.pop(i, None)
        self.verbatim = sorted(kept_whole)
        self.upto = j
        self.chunks = [*self.chunks, chunk]
        if len(self.chunks) > 1 and sum(c.tokens for c in self.chunks) > (
                policy.summaries_share * room):
            self.chunks = [summaries.merge_chunks(self.chunks, self.head, counter, policy,
                                                  room)]
        return chunk
