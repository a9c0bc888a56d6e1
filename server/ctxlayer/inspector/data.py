"""What the inspector page shows.

`build_inspector_data` joins a conversation, each message's token count and the daemon's
trim/assemble/prepare outcome into an `InspectorData`. The slider's verdicts are not worked out
by the page: `steps.py` runs the engine at a set of budgets and the page looks up the nearest
one, so what the slider says at the current budget is the table's outcome, letter for letter.
No I/O here.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ctxlayer.core.text import describe
from ctxlayer.protocol import AuditEntry, Message

#: priority classes: 0 is never dropped; the others are filled in the order given.
PRIORITY_CLASSES: dict[int, str] = {
    0: "P0 system and pinned",
    1: "P1 recent messages",
    2: "P2 older history",
    3: "P3 retrieved documents",
}
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
    tokens_after: int | None = None  # a shortened message's count as sent (`tokens` before)
    layer: str = "history"  # which layer of the budget it fills (LAYERS), its colour
    reason: str | None = None
    id: str | None = None
    kind: str | None = None
    pinned: bool = False
    tool_call_ids: list[str] | None = None
    tool_call_id: str | None = None


class InspectorStep(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """The engine's outcome at one budget: one letter per message (see VERDICTS)."""

    budget: int
    verdicts: str = ""
    tokens: int = 0  # what the engine's result costs at this budget
    error: str | None = None  # why the engine cannot fit the chat at this budget


#: a step's letter for each state a message can be left in
VERDICTS = {"kept": "k", "truncated": "s", "dropped": "d"}


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
    cache_boundary: int | None = None  # the row the cached prefix ends before
    #: the cached prefix's tokens when the daemon knows them (a live chat's est. cache: its
    #: summaries count there, not the rows they replace), else the rows above the boundary
    cache_tokens: int | None = None
    compaction_at: int | None = None
    session_id: str | None = None
    overhead: int = 0  # tokens the request costs besides its messages (reply priming)
    steps: list[InspectorStep] = []  # the engine's outcome at other budgets, smallest first


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
    # a session's working notes lead its messages beside the system prompt (class 0), but
    # they fill the working layer, as the legend counts them
    if row.kind in ("memory", "toolOutput"):
        return "working"
    return "system" if row.role == "system" and row.priority_class == 0 else "history"


def _one_line(msg: Message, width: int = 90) -> str:
    """A row's line, in the audit table's words (`describe`): a message of images, documents
    or tool calls names each part and what it costs, not "(empty)" for its empty text."""
    return describe(msg, width)


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
    cache_tokens: int | None = None,
    compaction_at: int | None = None,
    session_id: str | None = None,
    title: str = "ctxlayer context",
    overhead: int = 0,
    steps: Sequence[InspectorStep] = (),
    result_tokens: int | None = None,
    tools: int = 0,
    history_audit: Sequence[AuditEntry] = (),
) -> InspectorData:
    """The page's data for a conversation as given (before trimming) and what trimming did.

    `tokens[i]` is the count of `messages[i]`. Audit entries are matched to messages by
    `messageId`, else by `index`. `steps` are the engine's outcomes at other budgets; the
    current budget's step is made here from `dropped` and `truncated`, the table's own audit,
    so the slider at the budget cannot say anything else than the table. `result_tokens` is
    what the engine's result costs (default: the layers' sum); it is the page's `used`.
    Without `layers`, each layer is the messages in it as the result has them: a shortened
    one at its size after shortening (its audit's tokens before and after), a dropped one
    not at all; the request's tool definitions (`tools` tokens) are in the system layer, as
    a live chat's page counts them. `history_audit` is what else explains a session's
    result, by its history's indexes, not the rows' (the messages its summary replaces,
    those an earlier stage shortened): in the table beside the dropped or the shortened,
    matched to no row; restored ones are kept whole, as a live chat's table says.
    """
    if len(tokens) != len(messages):
        raise ValueError("tokens: one count per message is required")
    outcome = outcomes(messages, dropped, truncated)
    after = sizes_after(messages, tokens, truncated)
    rows = []
    classes = _classes(messages)
    for i, m in enumerate(messages):
        state, reason = outcome.get(i, ("kept", None))
        row = InspectorMessage(
            index=i, id=m.id, role=m.role, kind=m.kind, pinned=m.pinned, tokens=tokens[i],
            summary=_one_line(m), priority_class=classes[i], state=state, reason=reason,
            tool_call_ids=[c.id for c in m.tool_calls] if m.tool_calls else None,
            tool_call_id=m.tool_call_id,
            tokens_after=after.get(i) if state == "truncated" else None,
        )
        row.layer = _layer_of(row)
        rows.append(row)
    if layers is None:
        layers = dict.fromkeys(LAYERS, 0)
        layers["system"] = tools
        for r in rows:
            if r.state != "dropped":
                layers[r.layer] += sent_tokens(r)
    layer_rows = [InspectorLayer(name=n, tokens=layers.get(n, 0)) for n in LAYERS]
    used = (sum(layer.tokens for layer in layer_rows) if result_tokens is None
            else result_tokens)
    return InspectorData(
        title=title, model=model, window=window, budget=budget, used=used, layers=layer_rows,
        messages=rows,
        dropped=[*dropped, *_history_dropped(history_audit, True)],
        truncated=[*truncated, *_history_dropped(history_audit, False)],
        cache_boundary=cache_boundary,
        cache_tokens=cache_tokens,
        compaction_at=compaction_at,
        session_id=session_id,
        overhead=overhead,
        steps=sorted([*(s for s in steps if s.budget != budget),
                      InspectorStep(budget=budget, verdicts=verdicts(messages, dropped, truncated),
                                    tokens=used)],
                     key=lambda s: s.budget),
    )


def _history_dropped(entries: Sequence[AuditEntry], dropped: bool) -> list[AuditEntry]:
    """The dropped entries of a history's audit, else those that shortened or summarized (not
    the restored: those are shown whole)."""
    return [e for e in entries if (e.action == "dropped") == dropped and e.action != "restored"]


def _classes(messages: Sequence[Message]) -> list[int]:
    """Each message's priority class, counting recent messages from the end."""
    non_system_seen = 0
    classes = [0] * len(messages)
    leading = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        classes[i] = priority_class(m, non_system_seen, leading_system=i < leading)
        if m.role != "system":
            non_system_seen += 1
    return classes


def _named(messages: Sequence[Message], entries: Sequence[AuditEntry]
           ) -> list[tuple[int, AuditEntry]]:
    """(message index, entry) for each entry that names a message (by `messageId`, else by
    `index`)."""
    by_id = {m.id: i for i, m in enumerate(messages) if m.id}
    named = []
    for e in entries:
        i = by_id.get(e.message_id) if e.message_id else e.index
        if i is not None and 0 <= i < len(messages):
            named.append((i, e))
    return named


def outcomes(messages: Sequence[Message], dropped: Sequence[AuditEntry],
             truncated: Sequence[AuditEntry]) -> dict[int, tuple[str, str]]:
    """Message index -> (state, reason) for each message the audit names; a message both
    shortened and dropped counts as dropped."""
    outcome: dict[int, tuple[str, str]] = {}
    for state, entries in (("truncated", truncated), ("dropped", dropped)):
        for i, e in _named(messages, entries):
            outcome[i] = (state, e.reason)
    return outcome


def sizes_after(messages: Sequence[Message], tokens: Sequence[int],
                truncated: Sequence[AuditEntry]) -> dict[int, int]:
    """Message index -> its tokens after shortening, for each message the audit shortened.
    Each entry takes off what it saved, so stages that shortened one message in turn, or
    one part of it, add up."""
    after: dict[int, int] = {}
    for i, e in _named(messages, truncated):
        saved = max(0, e.tokens_before - e.tokens_after)
        after[i] = max(0, after.get(i, tokens[i]) - saved)
    return after


def sent_tokens(row: InspectorMessage) -> int:
    """What a message the result keeps costs in it: after shortening when it was shortened."""
    return row.tokens if row.tokens_after is None else row.tokens_after


def verdicts(messages: Sequence[Message], dropped: Sequence[AuditEntry],
             truncated: Sequence[AuditEntry]) -> str:
    """One letter per message: k kept, s shortened (outlined, summarized, cut), d dropped."""
    outcome = outcomes(messages, dropped, truncated)
    return "".join(VERDICTS[outcome.get(i, ("kept", ""))[0]] for i in range(len(messages)))
