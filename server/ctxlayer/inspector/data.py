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

#: priority classes: 0 is never dropped; the others are filled in the order given.
PRIORITY_CLASSES: dict[int, str] = {
    0: "P0 system and pinned",
    1: "P1 recent messages",
    2: "P2 older history",
    3: "P3 retrieved documents",
}
#: the class order the page starts from when the user switches to filling by class
DEFAULT_ORDER = (1, 2, 3)
#: how many trailing non-system messages count as recent (P1)
RECENT_MESSAGES = 8  # as the trim engine's TrimOptions.recent

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
    overhead: int = 0  # tokens the request costs besides its messages (reply priming)


def priority_class(msg: Message, position_from_end: int, leading_system: bool = False) -> int:
    """A message's priority class: its own `priority` when set, else 0 for the leading system
    block and pinned messages (never dropped), 3 for documents, 1 for the newest
    RECENT_MESSAGES messages and 2 for older history."""
    if leading_system:
        return 0
    if msg.priority is not None:
        return max(0, min(3, msg.priority))
    if msg.pinned:
        return 0
    if msg.kind == "doc":
        return 3
    return 1 if position_from_end < RECENT_MESSAGES else 2


def _layer_of(row: InspectorMessage) -> str:
    """Which layer of the budget a message fills (the daemon's ids and kinds say it)."""
    if row.id == "ctx:workspace":
        return "workspace"
    if row.kind == "rule":
        return "rules"
    if row.kind in ("memory", "toolOutput") and row.priority_class != 0:
        return "working"
    return "system" if row.role == "system" and row.priority_class == 0 else "history"


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
    overhead: int = 0,
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
    leading = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        classes[i] = priority_class(m, non_system_seen, leading_system=i < leading)
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
    if layers is None:
        layers = dict.fromkeys(LAYERS, 0)
        for r in rows:
            if r.state != "dropped":
                layers[_layer_of(r)] += r.tokens
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
        overhead=overhead,
    )


def _groups(messages: Sequence[InspectorMessage]) -> dict[int, list[InspectorMessage]]:
    """Keep-with groups: a tool call and its results, keyed by the call's index."""
    owner: dict[str, int] = {}
    groups: dict[int, list[InspectorMessage]] = {}
    for m in messages:
        g = owner.get(m.tool_call_id) if m.tool_call_id else None
        key = m.index if g is None else g
        groups.setdefault(key, []).append(m)
        for cid in m.tool_call_ids or ():
            owner[cid] = m.index
    return groups


def would_drop(
    messages: Sequence[InspectorMessage],
    budget: int,
    order: Sequence[int] | None = None,
    overhead: int = 0,
) -> set[int]:
    """Indices that a budget of `budget` tokens would drop.

    Class 0 (the leading system block, pinned messages), the newest user message and their
    groups are always kept. With
    `order=None` the rest is filled like the pipeline strategy's limit step: newest to oldest
    by whole groups (a tool call with its results), a group that does not fit is dropped and
    older, smaller ones still get the room. With an `order` of classes, the groups of the
    first class are filled first (newest first), then the next class, and so on. `overhead`
    is what the request costs besides its messages (the reply priming).
    """
    groups = _groups(messages)
    # the newest user message is never dropped: it is kept like the fixed block
    question = max((m.index for m in messages if m.role == "user" and m.kind != "doc"),
                   default=None)
    fixed = {k for k, members in groups.items()
             if any(m.priority_class == 0 or m.index == question for m in members)}
    room = budget - overhead - sum(m.tokens for k in fixed for m in groups[k])
    rest = sorted((k for k in groups if k not in fixed),
                  key=lambda k: -max(m.index for m in groups[k]))
    if order is not None:
        rank = {cls: r for r, cls in enumerate(order)}

        def group_rank(k: int) -> int:
            return min(rank.get(m.priority_class, len(rank)) for m in groups[k])

        rest.sort(key=group_rank)  # stable: newest first within a class
    dropped: set[int] = set()
    for k in rest:
        cost = sum(m.tokens for m in groups[k])
        if cost <= room:
            room -= cost
        else:
            dropped.update(m.index for m in groups[k])
    return dropped
