"""What the inspector page shows, and the drop order its slider replays.

`build_inspector_data` joins a conversation, each message's token count and the daemon's
trim/assemble outcome into an `InspectorData`. `would_drop` is the reference version of the
page's client-side recomputation (the JavaScript in assets.py must agree with it; a browser
test checks both): the pipeline strategy's limit step, leading system and pinned messages
never dropped, the rest filled newest first, by priority class when classes are reordered.
No I/O here.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ctxlayer.protocol import AuditEntry, Message

#: priority classes (T6): 0 is never dropped; the others are filled in the order given.
PRIORITY_CLASSES: dict[int, str] = {
    0: "P0 system and pinned",
    1: "P1 recent messages",
    2: "P2 older history",
    3: "P3 retrieved documents",
}
#: default fill order of the droppable classes: the pipeline strategy's newest-first fill.
DEFAULT_ORDER = (1, 2, 3)
#: how many trailing non-system messages count as recent (P1)
RECENT_MESSAGES = 6

LAYERS = ("system", "workspace", "rules", "working", "history")


class InspectorLayer(msgspec.Struct, rename="camel", kw_only=True):
    name: str
    tokens: int


class InspectorMessage(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    index: int
    role: str
    tokens: int
    summary: str
    priority_class: int
    state: str = "kept"  # kept | dropped | truncated
    reason: str | None = None
    id: str | None = None
    kind: str | None = None
    pinned: bool = False
    tool_call_ids: list[str] | None = None
    tool_call_id: str | None = None


class InspectorData(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    title: str
    model: str
    window: int
    budget: int
    used: int
    layers: list[InspectorLayer]
    messages: list[InspectorMessage]
    dropped: list[AuditEntry] = []
    truncated: list[AuditEntry] = []
    cache_boundary: int | None = None
    compaction_at: int | None = None
    session_id: str | None = None


def priority_class(msg: Message, position_from_end: int) -> int:
    """A message's priority class: its own `priority` when set, else by role, kind and age."""
    if msg.priority is not None:
        return max(0, min(3, msg.priority))
    if msg.role == "system" or msg.pinned:
        return 0
    if msg.kind == "doc":
        return 3
    return 1 if position_from_end < RECENT_MESSAGES else 2


def _one_line(msg: Message, width: int = 90) -> str:
    head = msg.role + (f"/{msg.kind}" if msg.kind and msg.kind != "chat" else "")
    if msg.tool_calls:
        head += " calling " + ", ".join(c.name for c in msg.tool_calls)
    first = next((ln.strip() for ln in msg.content.splitlines() if ln.strip()), "(empty)")
    if len(first) > width:
        first = first[: width - 1] + "…"
    return f"{head}: {first}"


def build_inspector_data(
    messages: Sequence[Message],
    tokens: Sequence[int],
    *,
    model: str,
    window: int,
    budget: int,
    dropped: Sequence[AuditEntry] = (),
    truncated: Sequence[AuditEntry] = (),
    layers: dict[str, int] | None = None,
    cache_boundary: int | None = None,
    compaction_at: int | None = None,
    session_id: str | None = None,
    title: str = "ctxlayer context",
) -> InspectorData:
    """The page's data for a conversation as given (before trimming) and what trimming did.

    `tokens[i]` is the count of `messages[i]`. Audit entries are matched to messages by
    `messageId`, else by `index`.
    """
    if len(tokens) != len(messages):
        raise ValueError("tokens: one count per message is required")
    by_id = {m.id: i for i, m in enumerate(messages) if m.id}
    outcome: dict[int, tuple[str, str]] = {}
    for state, entries in (("truncated", truncated), ("dropped", dropped)):
        for e in entries:
            i = by_id.get(e.message_id) if e.message_id else e.index
            if i is not None and 0 <= i < len(messages):
                outcome[i] = (state, e.reason)
    rows = []
    non_system_seen = 0
    classes = [0] * len(messages)
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        classes[i] = priority_class(m, non_system_seen)
        if m.role != "system":
            non_system_seen += 1
    for i, m in enumerate(messages):
        state, reason = outcome.get(i, ("kept", None))
        rows.append(
            InspectorMessage(
                index=i,
                id=m.id,
                role=m.role,
                kind=m.kind,
                pinned=m.pinned,
                tokens=tokens[i],
                summary=_one_line(m),
                priority_class=classes[i],
                state=state,
                reason=reason,
                tool_call_ids=[c.id for c in m.tool_calls] if m.tool_calls else None,
                tool_call_id=m.tool_call_id,
            )
        )
    kept = sum(r.tokens for r in rows if r.state != "dropped")
    if layers is None:
        system = sum(r.tokens for r in rows if r.priority_class == 0 and r.state != "dropped")
        layers = {"system": system, "history": kept - system}
    layer_rows = [InspectorLayer(name=n, tokens=layers.get(n, 0)) for n in LAYERS]
    used = sum(layer.tokens for layer in layer_rows)
    return InspectorData(
        title=title,
        model=model,
        window=window,
        budget=budget,
        used=used,
        layers=layer_rows,
        messages=rows,
        dropped=list(dropped),
        truncated=list(truncated),
        cache_boundary=cache_boundary,
        compaction_at=compaction_at,
        session_id=session_id,
    )


def would_drop(
    messages: Sequence[InspectorMessage], budget: int, order: Sequence[int] = DEFAULT_ORDER
) -> set[int]:
    """Indices that a budget of `budget` tokens would drop, filling class by class in `order`,
    newest first within a class; the first message that does not fit ends the fill. Class 0
    is always kept. A tool result whose calling assistant message is dropped is dropped too.
    """
    used = sum(m.tokens for m in messages if m.priority_class == 0)
    kept = {m.index for m in messages if m.priority_class == 0}
    full = False
    for cls in order:
        for m in sorted((m for m in messages if m.priority_class == cls), key=lambda m: -m.index):
            if full or used + m.tokens > budget:
                full = True
                continue
            used += m.tokens
            kept.add(m.index)
    dropped_calls = {
        cid for m in messages if m.index not in kept for cid in (m.tool_call_ids or ())
    }
    for m in messages:
        if m.tool_call_id and m.tool_call_id in dropped_calls and m.priority_class != 0:
            kept.discard(m.index)
    return {m.index for m in messages} - kept
