"""The trim engine's warm path: what the previous trim of a conversation worked out per message,
kept by the caller in a TrimCache and taken over for the messages the new turn shares with it.

A chat grows by a message or two a turn; counting, describing and outlining its 400 unchanged
messages again is most of a re-trim. The cache holds, per position, the message and the facts
derived from it; a fact is reused only while the message at that position is the same (by
identity, else equal) and, for facts of its text, while the text is the very same string. It
also holds, for the shared prefix, the positions each test of a message alone holds for and the
tool groups, so a stage about a few messages looks at those only and a re-trim reads only the
new messages for them. The decisions themselves (what to drop, what to shorten) are made again,
so a warm trim returns exactly what a cold one would; only the old end of `limit`'s walk, where
the room ran out, is the previous walk's when this one would decide it the same (tail.py).

Like Memo it is injected: one per conversation, owned by the caller; the core keeps no state.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable
from typing import Any

from ctxlayer.core.groups import ToolGroups
from ctxlayer.core.tokens import MessageFormat, Tokenizer
from ctxlayer.core.trim.tail import Tail
from ctxlayer.protocol import Message

#: kinds of facts kept at most; options that change every turn must not grow the cache forever
MAX_KINDS = 16
#: old ends of `limit`'s walk kept at most (one per room they were walked with and start)
MAX_TAILS = 8


class TrimCache:
    __slots__ = ("arguments", "base", "counter", "extra", "facts", "fmt", "groups", "lists", "msgs",
                 "reused", "tails", "tokens")

    def __init__(self) -> None:
        self.msgs: list[Message] = []
        self.counter: Tokenizer | None = None
        self.fmt: MessageFormat | None = None
        self.extra: list[int] = []  # tokens beyond the text, per message
        self.tokens: list[int] = []  # tokens of the message as it came, per message
        self.arguments: list[int] = []  # tokens of its calls' arguments, per message
        #: kind -> per position (the text it was derived from, the fact), or None
        self.facts: dict[Hashable, list[tuple[str, Any] | None]] = {}
        #: the tool groups of the messages the last trim linked, while they lead this trim's
        self.groups: ToolGroups | None = None
        #: the groups those grew from (of the messages the last trim shared with the one before):
        #: the same chat with another last message starts from them, not from nothing
        self.base: ToolGroups | None = None
        #: name -> (the positions whose message a test holds for, how many messages were tested)
        self.lists: dict[Hashable, tuple[list[int], int]] = {}
        self.reused = 0  # messages taken over by the last trim (for tests and benchmarks)
        #: the old ends of the last walks of `limit` (tail.py) by the room they were walked
        #: with and where they start, while their messages lead this trim's: a turn's last
        #: room is one of a few (0 to 3 tokens in the 1M bench), rarely the one before's, and
        #: where it ran out one of a few too (message 200 or 97 there, by the new message's
        #: size: keyed by room alone, each turn of one kind put out the other's)
        self.tails: dict[tuple[int, int], Tail] = {}

    def shared(self, msgs: list[Message], counter: Tokenizer, fmt: MessageFormat) -> int:
        """How many leading messages are the same as in the previous trim. Only with the same
        counter and format: the counts depend on them."""
        if counter is not self.counter or fmt != self.fmt:
            return 0
        return common_prefix(msgs, self.msgs)

    def keep(self, msgs: list[Message], same: int, counter: Tokenizer, fmt: MessageFormat,
             extra: list[int], tokens: list[int], arguments: list[int]) -> None:
        """Remember this trim's messages; facts past the shared prefix are forgotten.
        ``arguments`` is read, never changed, by the trim (kept as it is, not copied)."""
        self.msgs, self.counter, self.fmt = msgs, counter, fmt
        self.extra, self.tokens, self.reused = extra, tokens, same
        self.arguments = arguments
        if len(self.facts) > MAX_KINDS:
            self.facts.clear()
        for key in [key for key, tail in self.tails.items() if tail.start > same]:
            del self.tails[key]
        # cut and grown in place: a copy of every column (each as long as the chat) was most
        # of this call, and a re-trim changes only the end of each
        fresh = [None] * (len(msgs) - same)
        for facts in self.facts.values():
            del facts[same:]
            facts += fresh
        if self.groups is not None and len(self.groups.lead) > same:
            # a message they read changed: made again from the groups they grew from, when
            # those still lead, else from the start
            base = self.base
            self.groups = base if base is not None and len(base.lead) <= same else None
            self.base = None
        for name, (where, tested) in self.lists.items():
            del where[bisect.bisect_left(where, same):]
            self.lists[name] = (where, min(tested, same))

    def keep_tail(self, kept: Tail | None) -> None:
        """Remember the old end of this trim's walk of `limit`, by its room and start (the
        newest MAX_TAILS)."""
        if kept is None:
            return
        self.tails.pop((kept.room, kept.start), None)
        self.tails[kept.room, kept.start] = kept
        while len(self.tails) > MAX_TAILS:
            del self.tails[next(iter(self.tails))]

    def where(self, name: Hashable, test: Callable[[Message], bool]) -> list[int]:
        """The positions of this trim's messages that ``test`` (a test of the message alone,
        named ``name``) holds for, in order: the shared prefix's as the previous trims found
        them, only the new messages tested. A stage that concerns a few messages (documents,
        ephemeral ones, tool outputs) then looks at those, not at all 400. Read, never changed
        by the caller (the next trim's `keep` cuts it in place)."""
        where, tested = self.lists.get(name, ([], 0))
        msgs = self.msgs
        if tested < len(msgs):
            where = where + [i for i in range(tested, len(msgs)) if test(msgs[i])]
            self.lists[name] = (where, len(msgs))
        return where

    def column(self, kind: Hashable) -> list[tuple[str, Any] | None]:
        """The facts `kind` by position: entry i is (the text it was derived from, the fact)
        or None. A loop over the messages reads and fills it itself, reusing a fact only while
        message i's current text is that very string (a call and a closure per message were
        most of a warm re-trim)."""
        facts = self.facts.get(kind)
        if facts is None:
            facts = self.facts[kind] = [None] * len(self.msgs)
        return facts


def common_prefix(new: list, old: list) -> int:
    """How many leading items of ``new`` and ``old`` are equal, found by halving with list
    comparisons in C (each compares an item by identity first): the usual turn, a chat grown
    at its end, is one comparison; a turn whose last message is another (a question edited and
    sent again) a few, where a loop in Python compared all 454 messages of a 1M-token chat."""
    n = min(len(old), len(new))
    if new[:n] == old[:n]:
        return n
    lo, hi = 0, n  # new[:lo] == old[:lo], new[:hi] != old[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if new[lo:mid] == old[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def remembered(facts: list[tuple[str, Any] | None] | None, i: int, text: str,
               make: Callable[[int], Any]) -> Any:
    """Fact i of a TrimCache column (None: no cache) while message i's text is that very
    string, else ``make(i)``, kept for the next turn."""
    hit = facts[i] if facts is not None else None
    if hit is not None and hit[0] is text:
        return hit[1]
    value = make(i)
    if facts is not None:
        facts[i] = (text, value)
    return value
