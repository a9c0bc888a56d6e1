"""How a live chat's summary chunks are merged: once together they pass their share of the
room the fewest newest become one that bring them down to room for the next steps' chunks
(`merge_goal`; never across a question shown whole between them), and when a step left the
request over its budget all of them shrink into one per side of that question.
`Window` (window.py) has these as its own; they read and change only its chunks.
"""

from __future__ import annotations

import dataclasses

from ctxlayer.core.compress.shorten import shorten_message
from ctxlayer.core.groups import is_result
from ctxlayer.core.prepare import summaries
from ctxlayer.core.prepare.model import Chunk, PreparePolicy
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import Tokenizer
from ctxlayer.protocol import AuditEntry, Message

#: a chunk keeps less than this share of what the newest two keep of their messages: squeezed
SQUEEZED = 0.3
#: the fewest tokens a chunk is cut to for the question's share: less says no more than its
#: header, and the last resort leaves it out (audited) instead
CUT_LEAST = 32
SHRUNK = ("shortened to fit: the summary of earlier messages made smaller (merged, or cut to "
          "its head and tail) for the newest exchange's room")


def merge_goal(share: float, newest: int, policy: PreparePolicy) -> float:
    """What the chunks are merged down to once they pass their ``share``: room below it for
    ``merge_ahead`` more chunks as big as the newest (``newest`` tokens: what a step of this
    conversation made, sized by its growth and its budget), so the steps of the next turns add
    chunks without merging again."""
    return share - policy.merge_ahead * newest


class Merging:
    """The merging of a Window's chunks (a mixin: the window holds the state)."""

    __slots__ = ()
    chunks: list[Chunk]
    head: int
    messages: list[Message]
    verbatim: list[int]

    def total(self) -> int:  # the window's (window.py)
        raise NotImplementedError

    def fit_summaries(self, budget: int, counter: Tokenizer, policy: PreparePolicy,
                      spare: int = 0) -> bool:
        """When the step left the request over the budget (the newest exchange is big), the
        chunks become one, sized to the room the rest leaves: a summary that stands for the
        whole history gives way to the newest exchange by shrinking, not by being dropped.
        ``spare``: the tokens the newest tool outputs can still give up (the last resort
        outlines them further), counted as room. True when the request now fits."""
        if not self.chunks:
            return False
        total = self.total()
        chunks = sum(c.tokens for c in self.chunks)
        want = budget - (total - chunks) - 8 + spare
        if want < 64:
            return False
        room = max(want, budget // 4)
        # each side of a question shown whole between them (`_merge_wall`) its own chunk, its
        # share of ``want`` by its size: one for all, the question was read before a summary
        # whose "Asked" was the one before it (the second review probe, with a CLAUDE.md kept)
        m = self._merge_wall()
        sides = [self.chunks] if m is None else [self.chunks[:m], self.chunks[m:]]
        out: list[Chunk | None] = [None] * len(sides)
        # the smaller side first: one chunk that no merge makes smaller within its share (the
        # summary of the two calls after the question, 25 tokens) stays as it is, and the
        # other side has the rest (it gave up: the summary of the task was dropped whole)
        for k in sorted(range(len(sides)), key=lambda k: sum(c.tokens for c in sides[k])):
            now = sum(c.tokens for c in sides[k])
            merged = self._merged(sides[k], counter, policy, room, want * now // chunks)
            if merged is None and len(sides[k]) == 1 and len(sides) > 1:
                merged = sides[k][0]
            if merged is None:
                return False
            out[k] = merged
            want -= merged.tokens
            chunks -= now
        if all(c is side[0] for c, side in zip(out, sides, strict=True)):
            return False  # nothing could be made smaller
        self.chunks = [c for c in out if c is not None]
        return self.total() <= budget

    def cut_summaries(self, budget: int, counter: Tokenizer, policy: PreparePolicy,
                      spare: int) -> None:
        """When no merge made the chunks small enough for the question to keep its share of
        the room (``spare``: what the question and the newest tool outputs can give up), each
        chunk is cut to its part of the room left, its head and tail, and kept so: no merge
        writes a chunk shorter than the ask of the chat's first task, and a 100-token chunk
        written on an earlier turn kept its room while a 700-token question went out at 32
        tokens of a 150-token budget. Nothing when that room is under CUT_LEAST a chunk (the
        last resort leaves them out then, audited) or they fit in it."""
        chunks = sum(c.tokens for c in self.chunks)
        want = budget - (self.total() - chunks) - 8 + spare
        if chunks <= want or want < CUT_LEAST * len(self.chunks):
            return
        out: list[Chunk] = []
        for c in self.chunks:
            got = shorten_message(c.message, c.tokens, want * c.tokens // chunks, counter,
                                  policy.fmt)
            out.append(c if got is None else dataclasses.replace(c, message=got[0],
                                                                 tokens=got[1]))
        self.chunks = out

    def _merged(self, side: list[Chunk], counter: Tokenizer, policy: PreparePolicy,
                room: int, want: int) -> Chunk | None:
        """``side``'s chunks as one of at most ``want`` tokens, smaller than they are; None
        when no merge gets there."""
        start = self.head if side[0] is self.chunks[0] else side[0].start
        merged = summaries.merge_chunks(side, start, counter, policy, room, want)
        for _ in range(3):
            if merged.tokens <= want:
                break
            merged = summaries.merge_chunks(side, start, counter, policy, room,
                                            int(want * want / merged.tokens * 0.9))
        if merged.tokens > want or merged.tokens >= sum(c.tokens for c in side):
            return None
        return merged

    def chunks_after(self, new: int, room: int, policy: PreparePolicy) -> int:
        """The tokens the chunks are expected to take once a new one of ``new`` tokens joined
        them and `_merge` ran: a merge shrinks them, so a step that counted them all added up
        summarized far more than its target asked (and left the request half empty). The
        same choice as `_merge_newest`, each merge guessed at what `merge_chunks` makes of any
        set: it counted a merge of every chunk where the newest two merged, and the step that
        took two messages for it left the request at its budget (`merge_ahead`)."""
        sizes = [*(c.tokens for c in self.chunks), new]
        share = policy.summaries_share * room
        if len(sizes) < 2 or sum(sizes) <= share:
            return sum(sizes)
        merged = 2 * summaries.estimate(policy, room)  # what merge_chunks makes of any set
        goal, under = merge_goal(share, new, policy), None
        for k in range(len(sizes) - 2, 0, -1):
            if merged >= sum(sizes[k:]):
                break
            now = sum(sizes[:k]) + merged
            if now <= goal:
                return now
            under = now if under is None and now <= share else under
        return under if under is not None else min(merged, sum(sizes))

    def _merge(self, counter: Tokenizer, policy: PreparePolicy, room: int, free: int) -> None:
        """The chunks merged as `_merge_within` says, never across a question shown whole
        between them (`_merge_wall`): the chunks after it (the work on it) merge among
        themselves, held to the share alone (with those before it counted, which no merge
        may take while it stands, a SWE-agent chat's summary of its work shrank to a third
        and lost a needed command), then those before it, with those after counted; merged
        across, the question was read before a summary whose "Asked" was the one before it."""
        m = self._merge_wall()
        if m is None:
            self._merge_within(counter, policy, room, free, self.head, 0)
            return
        before, after = self.chunks[:m], self.chunks[m:]
        if len(after) > 1:
            self.chunks = after
            self._merge_within(counter, policy, room, free, after[0].start, 0)
            after = self.chunks
        if len(before) > 1:
            self.chunks, others = before, sum(c.tokens for c in after)
            self._merge_within(counter, policy, room, free - others, self.head, others)
            before = self.chunks
        self.chunks = [*before, *after]

    def _merge_wall(self) -> int | None:
        """The first chunk after the newest user turn shown whole between chunks (a question a
        step kept, `wall`), or None when there is none."""
        newest = [c.audit[-1].index if c.audit else -1 for c in self.chunks]
        for v in reversed(self.verbatim):
            m = self.messages[v]
            if m.role != "user" or is_result(m):
                continue
            after = next((k for k, n in enumerate(newest) if n > v), None)
            if after is not None and after > 0:
                return after
            if after == 0:
                return None
        return None

    def _merge_within(self, counter: Tokenizer, policy: PreparePolicy, room: int, free: int,
                      start: int, others: int) -> None:
        """Once the chunks together pass ``summaries_share`` of the room, the fewest newest
        become one that bring them down to `merge_goal` (`_merge_newest`): the prefix up to
        the older chunks holds; a merge of every chunk, which moves the prefix from the start,
        only when no such merge gets them under the share (`_merge_every`). ``free``: the
        tokens the chunks may take below the step's target; ``start``: where the first chunk's
        messages start; ``others``: the tokens of the chunks on the other side of a wall
        (`_merge`), out of the share."""
        share = policy.summaries_share * room - others
        if len(self.chunks) < 2 or sum(c.tokens for c in self.chunks) <= share:
            return
        newest = self._merge_newest(counter, policy, room, share)
        if newest is not None:
            self.chunks = newest
            return
        self._merge_every(counter, policy, room, free, start, share * policy.merge_share)

    def _merge_newest(self, counter: Tokenizer, policy: PreparePolicy, room: int,
                      share: float) -> list[Chunk] | None:
        """The chunks with the newest of them (from the newest two, or from an older one the
        last resort squeezed: `_merge_from`) merged into one, as few as bring them down to
        `merge_goal`; when none does, as few as bring them under ``share``. None when the
        newest no longer shrink, or only a merge of every chunk gets them under it.
        Only the newest two, each merge freed a few tokens: mini-swe-agent on astroid-1333 at
        25% of its tokens merged at 14 of its last 35 requests (from the 106th), each writing
        again the half of the request from the merged chunk on, its bill 89% of sending
        everything; merged down to the goal, twice, and 70%."""
        goal, under = merge_goal(share, self.chunks[-1].tokens, policy), None
        for k in range(self._merge_from(), 0, -1):
            newest = self.chunks[k:]
            merged = summaries.merge_chunks(newest, newest[0].start, counter, policy, room)
            if merged.tokens >= sum(c.tokens for c in newest):
                return None
            now = sum(c.tokens for c in self.chunks[:k]) + merged.tokens
            if now <= goal:
                return [*self.chunks[:k], merged]
            if under is None and now <= share:
                under = [*self.chunks[:k], merged]
        return under

    def _merge_every(self, counter: Tokenizer, policy: PreparePolicy, room: int, free: int,
                     start: int, merged_share: float) -> None:
        """Every chunk merged into one (the newest kept beside it when it comes out smaller,
        `_beside_newest`), grown into ``free`` (more of the ledger), as a new chunk does, to at
        least ``summaries_min_share`` of the room and within ``merged_share`` (``merge_share``
        of ``summaries_share``: the rest is the next chunks' room)."""
        merged = summaries.merge_chunks(self.chunks, start, counter, policy, room)
        want = min(max(free, summaries.least_room(policy, room)), int(merged_share))
        if want > merged.tokens * 5 // 4:
            grown = summaries.merge_chunks(self.chunks, start, counter, policy, room, want)
            if merged.tokens < grown.tokens <= want:
                merged = grown
            if merged.tokens + self.chunks[-1].tokens <= want:
                self.chunks = self._beside_newest(merged, want, counter, policy, room, start)
                return
        else:
            # in a small room the parts' least sizes, doubled, passed the share: the one chunk
            # grew at each merge and every step rewrote it whole. The parts are sized in
            # characters; a ledger of paths takes more tokens than they guess, so the size is
            # corrected by what came out, twice at most
            want = int(merged_share)
            for _ in range(3):
                if merged.tokens <= merged_share:
                    break
                smaller = summaries.merge_chunks(self.chunks, start, counter, policy, room,
                                                 want)
                if smaller.tokens < merged.tokens:
                    merged = smaller
                want = int(want * merged_share / max(1, smaller.tokens) * 0.95)
        self.chunks = [merged]

    def _beside_newest(self, merged: Chunk, want: int, counter: Tokenizer,
                       policy: PreparePolicy, room: int, start: int) -> list[Chunk]:
        """The chunks once every chunk merged into ``merged`` came out under ``want`` (what
        they hold says no more): the newest stay as they are while they fit beside a merge of
        the older ones (two at least), which moves the prefix from the first chunk on all the
        same. One chunk for all of them left a big budget's request at half of it: seventeen
        chunks of 78k tokens merged into 15.5k."""
        chunks = self.chunks
        keep, beside = len(chunks), 0
        while keep > 2 and merged.tokens + beside + chunks[keep - 1].tokens <= want:
            keep -= 1
            beside += chunks[keep].tokens
        if keep == len(chunks):  # two chunks: nothing to keep beside a merge of one
            return [merged]
        older = summaries.merge_chunks(chunks[:keep], start, counter, policy, room,
                                       want - beside)
        return [older, *chunks[keep:]]

    def _merge_from(self) -> int:
        """Where a merge starts: the newest two chunks, or the oldest chunk the last resort
        squeezed (one keeping of its messages less than ``SQUEEZED`` of what the newest two
        keep of theirs: a big exchange left one a hundred tokens for fifty messages) and all
        after it. Merged after it, pairs left it that small for the rest of the conversation;
        folded into the next merge, its ledger is rendered again at the room's size, and
        rewriting it costs only its few tokens more."""
        chunks = self.chunks
        k = len(chunks) - 2
        kept = sum(c.tokens for c in chunks[k:]) / max(1, sum(c.replaced_tokens
                                                              for c in chunks[k:]))
        for j in range(k):
            if chunks[j].tokens < SQUEEZED * kept * chunks[j].replaced_tokens:
                return j
        return k


def told_shrunk(before: list[Chunk], after: list[Chunk]) -> list[AuditEntry]:
    """One audit entry for each chunk of ``after`` a fit made smaller than the chunks of
    ``before`` it stands for (`fit_summaries`, `cut_summaries`): the summary the client was
    sent shrank, and the audit says by how much."""
    out: list[AuditEntry] = []
    for c in after:
        if any(c is b for b in before):
            continue
        was = sum(b.tokens for b in before if c.start <= b.start and b.upto <= c.upto)
        out.append(AuditEntry(action="truncated", reason=SHRUNK, summary=describe(c.message),
                              tokens_before=was, tokens_after=c.tokens,
                              message_id=c.message.id))
    return out
