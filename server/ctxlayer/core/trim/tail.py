"""The old end of a long chat in `limit`, replayed: the previous turn's walk of it taken over
when this turn's walk would make the very same decisions there.

`limit` walks from the newest message to the oldest with the room left; past the last message
it kept, the room stays what it is and every older message is dropped with it (a 1M-token chat
in a 128k window: 150 of its 200 drops, each with its audit entry). A re-trim after one more
message walks that end again. The walk of a stretch [0, q) reads only: the room when it gets
there, and each message's cost, whether it is alive or fixed, its tool group and, for the
audit, the message itself. So when this turn reaches q with the room the previous walk had
there, the messages before q are the ones it shared with the previous trim, their costs,
liveness, fixed set and groups are equal, and no tool group spans q (in either turn), the
previous walk's decisions and entries for [0, q) are this walk's: they are replayed (the alive
flags copied, the entries appended, their tokens taken off) instead of walked.

Kept by the TrimCache (`tail`), cut to the prefix each trim shares with the one before; pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass

from ctxlayer.protocol import AuditEntry


@dataclass(frozen=True, slots=True)
class Tail:
    """The stretch [0, start) of one walk of `limit`, walked with `room` left throughout."""

    start: int
    room: int
    tokens: list[int]  # costs of [0, start)
    group: list[int]  # the group (its lead) of each message of [0, start)
    fixed: list[int]  # the fixed messages in [0, start), in order
    alive: list[bool]  # [0, start) once walked
    entries: list[AuditEntry]  # what the walk of `limit` dropped, in order; [0, start)'s last


def remember(start: int, room: int, tokens: list[int], group: list[int], fixed: Set[int],
             alive: list[bool], entries: list[AuditEntry]) -> Tail | None:
    """The tail of a walk that kept nothing below `start` (None when a group spans it: its
    decision was made above, and the stretch alone would not say it)."""
    if start <= 0 or min(group[start:], default=start) < start:
        return None
    return Tail(start, room, tokens[:start], group[:start],
                sorted(i for i in fixed if i < start), alive[:start], entries)


def replay(tail: Tail, q: int, room: int, tokens: list[int], group: list[int],
           fixed: Set[int], alive: list[bool]) -> list[AuditEntry] | None:
    """The entries of the previous walk's [0, q) with `alive[:q]` set as it left them, when
    this walk, at q with `room` left, would decide all of it the same (the module docstring);
    None, nothing changed, when it might not. The caller makes sure that the messages before
    q are those the tail was walked over (the prefix the cache shares)."""
    start = tail.start
    if not 0 < q <= start or room != tail.room or tokens[:q] != tail.tokens[:q]:
        return None
    if min(group[q:], default=q) < q or group[:start] != tail.group:
        return None  # a group spans q (in this turn; the same groups: in the previous too)
    if [i for i in tail.fixed if i < q] != sorted(i for i in fixed if i < q):
        return None
    entries = tail.entries
    k = len(entries)
    while k > 0 and entries[k - 1].index is not None and entries[k - 1].index < q:
        k -= 1  # the units below q, decided last: their entries end the list
    ours = entries[k:]
    before = tail.alive[:q]
    for e in ours:
        before[e.index] = True  # type: ignore[index]
    if before != alive[:q]:
        return None
    alive[:q] = tail.alive[:q]
    return ours


def by_room(tails: Iterable[Tail]) -> dict[int, list[Tail]]:
    """The tails a walk may replay, by the room they were walked with (each tried once)."""
    out: dict[int, list[Tail]] = {}
    for t in tails:
        out.setdefault(t.room, []).append(t)
    return out


def replay_any(tails: dict[int, list[Tail]], q: int, room: int, tokens: list[int],
               group: list[int], fixed: Set[int], alive: list[bool]) -> list[AuditEntry] | None:
    """`replay` of a tail walked with `room` that reaches q (starts at q or later), the first
    that this walk would decide the same; one that would not is tried no more (taken out of
    ``tails``). Any of them gives the same: each holds the decisions of [0, q) for that room."""
    mine = tails[room]
    for t in [t for t in mine if t.start >= q]:
        mine.remove(t)
        ours = replay(t, q, room, tokens, group, fixed, alive)
        if ours is not None:
            return ours
    if not mine:
        del tails[room]
    return None
