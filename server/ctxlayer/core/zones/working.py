"""Zone B: working items, their heat, decay, compression and removal.

A turn is what the user sees as one: their request and the assistant's answer to it, however
many tool-calling steps the answer took. It ends with the assistant's message without tool
calls, or, when the steps had no such answer (the user cut them short, or an agent ends every
message with a tool call), with the user's next message. Each turn every item's heat is
multiplied by ``factor`` (0.7) unless one of the turn's replies refers to it (see
references.py), which resets its heat to 1.0 and restores its full text. A step refers at
once (the next step sees the item restored) but cools nothing: an agent answering one request
in seven steps must not lose the request's notes before it answers. Below ``compress_below``
(0.34) an item is shown compressed to about a quarter, structured facts kept; below
``remove_below`` (0.1) it is removed, unless it was added with ``optional = False``: such an
item is compressed but never removed. A short form keeps some of the item's text: one that
keeps none (or is not shorter) is not taken, and the item stays whole.

The comparisons are strict, as the design states them ("below 0.34"): 0.7**3 = 0.343 is not below
0.34, so an unreferenced item is compressed after its 4th turn and removed after its 7th
(0.7**7 = 0.082); the thresholds are configurable.

Policy is data on the item (``heat``, ``optional``, ``compressed``); the module reports every
change as an ItemEvent so the caller can audit it. Must not: count tokens or store anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from ctxlayer.core.zones.references import Reply, is_referenced, reference_keys
from ctxlayer.protocol import Message


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

    def __post_init__(self) -> None:
        # an empty short form, as earlier builds stored for notes with no space to cut
        # at, showed the note as nothing: it is read as no short form, and the note is whole
        if self.compressed is not None and not self.compressed.strip():
            self.compressed = None

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
    ``reply``: all the turn's replies (its steps' too).

    Items are updated in place (heat, compressed); removed items are left out of the result.
    """
    kept: list[WorkingItem] = []
    events: list[ItemEvent] = []
    said = Reply(reply)  # read once for every item: items x reply was seconds a turn
    for item in items:
        if _warmed(item, said, events):
            kept.append(item)
            continue
        item.heat *= policy.factor
        if item.heat < policy.remove_below and item.optional:
            events.append(_event(item, "removed", item.shown, ""))
            continue
        if item.heat < policy.compress_below and item.compressed is None:
            short = compress(item.content)
            # an empty short form is the item lost, not compressed: it stays whole instead
            if short.strip() and len(short) < len(item.content):
                item.compressed = short
                events.append(_event(item, "compressed", item.content, short))
        kept.append(item)
    return kept, events


def refer_step(items: list[WorkingItem], reply: str) -> list[ItemEvent]:
    """Apply one tool-calling step of a turn to zone B: the items it refers to are warmed
    (heat 1.0, full text back) at once; none cools (the turn's end does). In place."""
    events: list[ItemEvent] = []
    said = Reply(reply)
    for item in items:
        _warmed(item, said, events)
    return events


def _warmed(item: WorkingItem, said: Reply, events: list[ItemEvent]) -> bool:
    """Whether the reply refers to the item: if so its heat is reset and its text restored."""
    if not is_referenced(item.keys, said):
        return False
    item.heat = 1.0
    if item.compressed is not None:
        events.append(_event(item, "restored", item.compressed, item.content))
        item.compressed = None
    else:
        events.append(_event(item, "referenced", item.content, item.content))
    return True


def reply_text(message: Message) -> str:
    """What an assistant message says that may refer to an item: its text and its tool calls."""
    return message.content + "".join(f" {c.name} {c.arguments}" for c in message.tool_calls or ())


def turn_so_far(messages: Sequence[Message]) -> list[str]:
    """The replies of the turn under way at the end of ``messages`` (a session's history): the
    assistant's tool-calling steps since the last user message, no answer having ended the
    turn. Read back from the history, so a turn spread over appends, or a restart, is one."""
    steps: list[str] = []
    for msg in reversed(messages):
        if msg.role == "user" or (msg.role == "assistant" and not msg.tool_calls):
            break
        if msg.role == "assistant":
            steps.append(reply_text(msg))
    return steps[::-1]


def after_message(
    items: list[WorkingItem],
    turn: list[str],
    message: Message,
    compress: Callable[[str], str],
    policy: DecayPolicy = DEFAULT_DECAY,
) -> tuple[list[WorkingItem], list[str], list[ItemEvent]]:
    """Zone B after one more message of a session: (items, the turn's replies so far, events).
    ``turn``: `turn_so_far` of the messages before it. A tool-calling step refers; the
    assistant's answer ends the turn with all its replies; a user message ends a turn whose
    steps had no answer."""
    if message.role == "assistant":
        reply = reply_text(message)
        if message.tool_calls:
            return items, [*turn, reply], refer_step(items, reply)
        kept, events = decay_turn(items, "\n".join([*turn, reply]), compress, policy)
        return kept, [], events
    if message.role == "user" and turn:
        kept, events = decay_turn(items, "\n".join(turn), compress, policy)
        return kept, [], events
    return items, turn, []


def _event(item: WorkingItem, action: str, before: str, after: str) -> ItemEvent:
    return ItemEvent(
        item_id=item.id, action=action, heat=round(item.heat, 6), before=before, after=after
    )


def render_item(item: WorkingItem) -> str:
    """One item as it appears in the working-zone message."""
    label = item.kind if item.compressed is None else f"{item.kind}, compressed"
    source = f" from {item.source}" if item.source else ""
    return f"## [{label}{source}] ({item.id})\n{item.shown}"
