"""Bringing one message of a session back whole (ctx/restore): the new state, and what an
assembly shows for it.

A restored message comes with its tool-call group (a call with all its results: the providers
reject one without the other) and stays restored for the session: shown whole and pinned. One
that the summary replaced is shown right after the summary, in conversation order; one still in
the verbatim tail is pinned there (the window neither shortens nor drops it). Those after the
summary take at most a quarter of the history share: past it they are shortened, and they give
way to the summary when it has no room beside them (both audited), so a restore never leaves a
session unable to assemble.
Pure: reads the history and the state, returns new values.
"""

from __future__ import annotations

import msgspec

from ctxlayer.core.assembly.compacted import Compaction, kept_in, verbatim_start
from ctxlayer.core.assembly.history import History
from ctxlayer.core.compress.shorten import TEXT_LEAST, shorten
from ctxlayer.core.errors import ContextError
from ctxlayer.core.groups import ToolGroups
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import Tokenizer, message_tokens
from ctxlayer.protocol import AuditEntry, Message

__all__ = ["RESTORED", "Shown", "restore", "restored_before"]

RESTORED = "restored on request: shown whole and pinned for this session"
#: of the history share, what the restored messages older than the summary take at most: the
#: summary and the newest turn need the rest
SHARE = 0.25


def _group(messages: list[Message], i: int) -> list[int]:
    """Indices of the tool-call group message i belongs to (just i when it has none)."""
    return ToolGroups(messages).of(i)


def restore(history: History, state: Compaction, message_id: str) -> tuple[Compaction,
                                                                            AuditEntry]:
    """The state with ``message_id`` (and its tool-call group) restored, and the audit entry.
    An id the session does not hold, or one no assembly can show (`_shown_at_all`), is
    ContextError("invalid") naming messageId."""
    index = next((i for i, m in enumerate(history.messages) if m.id == message_id), None)
    if index is None:
        raise ContextError("invalid", f"this session holds no message with id {message_id!r} "
                           "(ctx/why lists the ids of what was cut)", field="messageId")
    _shown_at_all(history, state, index, message_id)
    seqs = {history.seqs[i] for i in _group(history.messages, index)}
    new = msgspec.structs.replace(
        state, restored=sorted({*state.restored, *seqs}),
        rewrites={s: r for s, r in state.rewrites.items() if s not in seqs})
    msg, tokens = history.messages[index], history.tokens[index]
    return new, AuditEntry(action="restored", reason=RESTORED, summary=describe(msg),
                           tokens_before=tokens, tokens_after=tokens, message_id=message_id,
                           index=index)


def _shown_at_all(history: History, state: Compaction, index: int, message_id: str) -> None:
    """Refuse to restore what no assembly can show: with no summary before it, a turn that
    comes before the session's first user message is dropped from every window (the history
    must start with a user turn; the providers reject one that opens with the assistant's).
    Restored, it was audited "shown whole and pinned" and dropped again by the next assembly.
    Once a summary replaces it, it can be restored: it is then shown after the summary."""
    msgs = history.messages
    if state.replaced or msgs[index].role == "system":
        return
    first = next((i for i, m in enumerate(msgs)
                  if m.role == "user" and m.tool_call_id is None), len(msgs))
    if index < first:
        raise ContextError(
            "invalid", f"message {message_id!r} comes before the session's first user message: "
            "an assembly starts the history with a user turn (the providers reject one that "
            "opens with another role), so it cannot be shown; nothing was restored",
            field="messageId")


class Shown(msgspec.Struct, kw_only=True):
    """The restored messages an assembly shows after the summary."""

    messages: list[Message]
    keys: list[str]
    tokens: list[int]
    truncated: list[AuditEntry]
    #: each message's position in the history (the kept-whole ones go between them in order)
    at: list[int] = msgspec.field(default_factory=list)


def restored_before(history: History, state: Compaction, share: int,
                    counter: Tokenizer) -> Shown:
    """The restored messages the summary replaced, in order, whole when together they take at
    most SHARE of ``share``, else each shortened to its part of that room (audited). Those kept
    whole anyway (`history.kept_whole`) are not among them: an assembly shows them as such."""
    start = verbatim_start(history, state)
    wanted = set(state.restored)
    whole = set(kept_in(history, 0, start))
    idx = [i for i in (history.index_of_seq(s) for s in state.restored)
           if i < start and history.seqs[i] in wanted and i not in whole]
    msgs = [history.messages[i] for i in idx]
    tokens = [history.tokens[i] for i in idx]
    keys = [f"R{history.seqs[i]}" for i in idx]
    truncated: list[AuditEntry] = []
    room, total = int(share * SHARE), sum(tokens)
    if total > room:
        _shorten_words(msgs, tokens, keys, idx, room, counter, truncated)
    return Shown(messages=msgs, keys=keys, tokens=tokens, truncated=truncated, at=idx)


def _shorten_words(msgs: list[Message], tokens: list[int], keys: list[str], idx: list[int],
                   room: int, counter: Tokenizer, truncated: list[AuditEntry]) -> None:
    """The restored messages over ``room`` in all: each one's words shortened to their part
    of the room, shared by words alone; its non-text parts (an image, thinking) are never
    shortened and take nothing of its words' part, so a message long only because of them
    is shown whole, and said to be over the room. Counted against its words, a 1,053-token
    screenshot left its 56-token question a room of 1 token: the question was cut to nothing,
    the image sent, and the message was still over the room. Changes the lists in place."""
    words = [counter.count(m.content) for m in msgs]
    said = f"the restored messages take at most {room} tokens of the history share"
    for k, m in enumerate(msgs):
        cap = max(TEXT_LEAST, room * words[k] // max(1, sum(words)))
        short = shorten(m.content, cap, counter, keep_head=m.role == "user") \
            if words[k] > cap else None
        new = m if short is None else msgspec.structs.replace(m, content=short.text)
        after = message_tokens(new, counter) if short is not None else tokens[k]
        parts = m.parts_tokens or 0
        if after < tokens[k]:
            kept = f" ({', '.join(m.parts)} kept whole)" if m.parts else ""
            reason = f"restored, shortened: its words cut to {cap} tokens{kept}: {said}"
            action = "truncated"
        elif parts and after > room * tokens[k] // max(1, sum(tokens)):
            what = ", ".join(m.parts or ()) or f"{parts} tokens"
            reason = (f"restored whole, over its part of the room: {said}, and its non-text "
                      f"parts ({what}) are never shortened; its words are kept whole")
            action = "restored"
        else:
            continue
        truncated.append(AuditEntry(
            action=action, reason=reason, summary=describe(m), tokens_before=tokens[k],
            tokens_after=after, message_id=m.id, index=idx[k]))
        if new is not m:
            msgs[k], tokens[k], keys[k] = new, after, f"{keys[k]}s{after}"
