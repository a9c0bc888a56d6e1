"""Zone B: working items, their heat, decay, compression and removal.

Each turn (one assistant reply) every item's heat is multiplied by ``factor`` (0.7) unless
the reply refers to it (see references.py), which resets its heat to 1.0 and restores its
full text. Below ``compress_below`` (0.34) an item is shown compressed to about a quarter,
structured facts kept; below ``remove_below`` (0.1) it is removed, unless it was added with
``optional = False``: such an item is compressed but never removed.

The comparisons are strict, as the design states them ("below 0.34"): 0.7**3 = 0.343 is not below
0.34, so an unreferenced item is compressed after its 4th turn and removed after its 7th
(0.7**7 = 0.082); the thresholds are configurable.

Policy is data on the item (``heat``, ``optional``, ``compressed``); the module reports every
change as an ItemEvent so the caller can audit it. Must not: count tokens or store anything.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ctxlayer.core.zones.references import Reply, is_referenced, reference_keys


class WorkingItem(msgspec.Struct, kw_only=True):
    """One zone-B item. ``compressed`` holds the short form once heat fell below the threshold."""

    id: str
    kind: str
    content: str
    optional: bool = True
    source: str | None = None
    heat: float = 1.0
    compressed: str | None = None
    seq: int = 0
    keys: tuple[str, ...] = ()

    @property
    def shown(self) -> str:
        """The text this item contributes to an assembly."""
        return self.compressed if self.compressed is not None else self.content


class DecayPolicy(msgspec.Struct, frozen=True, kw_only=True):
    factor: float = 0.7
    compress_below: float = 0.34
    remove_below: float = 0.1


DEFAULT_DECAY = DecayPolicy()


class ItemEvent(msgspec.Struct, frozen=True, kw_only=True):
    """What a turn did to one item: "referenced", "compressed", "restored" or "removed"."""

    item_id: str
    action: str
    heat: float
    before: str
    after: str


def new_item(
    id: str, kind: str, content: str, *, optional: bool = True, source: str | None = None,
    seq: int = 0,
) -> WorkingItem:
    """A fresh item at heat 1.0 with its reference keys taken once."""
    return WorkingItem(
        id=id, kind=kind, content=content, optional=optional, source=source, seq=seq,
        keys=reference_keys(content),
    )


def decay_turn(
    items: list[WorkingItem],
    reply: str,
    compress: Callable[[str], str],
    policy: DecayPolicy = DEFAULT_DECAY,
) -> tuple[list[WorkingItem], list[ItemEvent]]:
    """Apply one turn to zone B; return the surviving items (same order) and the events.

    Items are updated in place (heat, compressed); removed items are left out of the result.
    """
    kept: list[WorkingItem] = []
    events: list[ItemEvent] = []
    said = Reply(reply)  # read once for every item: items x reply was seconds a turn
    for item in items:
        if is_referenced(item.keys, said):
            item.heat = 1.0
            if item.compressed is not None:
                events.append(_event(item, "restored", item.compressed, item.content))
                item.compressed = None
            else:
                events.append(_event(item, "referenced", item.content, item.content))
            kept.append(item)
            continue
        item.heat *= policy.factor
        if item.heat < policy.remove_below and item.optional:
            events.append(_event(item, "removed", item.shown, ""))
            continue
        if item.heat < policy.compress_below and item.compressed is None:
            short = compress(item.content)
            if len(short) < len(item.content):
                item.compressed = short
                events.append(_event(item, "compressed", item.content, short))
        kept.append(item)
    return kept, events


def _event(item: WorkingItem, action: str, before: str, after: str) -> ItemEvent:
    return ItemEvent(
        item_id=item.id, action=action, heat=round(item.heat, 6), before=before, after=after
    )


def render_item(item: WorkingItem) -> str:
    """One item as it appears in the working-zone message."""
    label = item.kind if item.compressed is None else f"{item.kind}, compressed"
    source = f" from {item.source}" if item.source else ""
    return f"## [{label}{source}] ({item.id})\n{item.shown}"
