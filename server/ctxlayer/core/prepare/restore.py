"""Messages a client asked to see again (`restored` ids of ctx/prepare): put back whole and
pinned for the conversation, or shortened to a share of the room when whole they would take
more, and shortened again when the budget shrank since.

Owns: `restore` (ids to indices, the newly restored shown, their audit), `RESTORED` (the
reason of one shown whole) and `RESTORE_SHARE`. Pure; it changes only the Window it is given.
"""

from __future__ import annotations

from collections.abc import Collection

import msgspec

from ctxlayer.core.compress.shorten import shorten_message
from ctxlayer.core.prepare.model import ConversationState, PreparePolicy
from ctxlayer.core.prepare.window import Window, newest_user
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import Tokenizer
from ctxlayer.protocol import AuditEntry, Message

RESTORED = "restored on request: shown whole and pinned for this conversation"


def _find(msgs: list[Message], message_id: str) -> int | None:
    return next((i for i, m in enumerate(msgs) if m.id == message_id), None)


def restore(previous: ConversationState | None, win: Window, restored: Collection[str],
             fit: tuple[int, Tokenizer, PreparePolicy]):
    """Resolve restored ids to indices; put the newly restored back whole, audited, or
    shortened to RESTORE_SHARE of the room when whole it takes more (`_restored_short`)."""
    msgs = win.messages
    before = previous.restored if previous is not None else {}
    audit = list(previous.restored_audit) if previous is not None else []
    at: dict[str, int] = {}
    newly: list[int] = []
    again: list[AuditEntry] = []  # restored before, shortened again this turn
    for rid in restored:
        idx = before.get(rid)
        if idx is None or idx >= len(msgs) or msgs[idx].id != rid:
            idx = _find(msgs, rid)
        if idx is None:
            continue  # no longer in the conversation: nothing to show
        at[rid] = idx
        if rid in before:
            again += _restored_again(win, idx, audit, *fit)
        else:
            newly.append(idx)
            was = win.shown_tokens(idx) if idx in win.rewrites else 0  # its outline, if any
            win.show_whole(idx)
            reason = _restored_short(win, idx, was, *fit) or RESTORED
            audit.append(AuditEntry(action="restored", reason=reason,
                                    summary=describe(msgs[idx]), tokens_before=0,
                                    tokens_after=win.shown_tokens(idx), message_id=rid,
                                    index=idx))
    return at, audit, newly, again


def _restored_again(win: Window, i: int, audit: list[AuditEntry], budget: int,
                   counter: Tokenizer, policy: PreparePolicy) -> list[AuditEntry]:
    """A message restored on an earlier turn, while the request is over a budget that shrank
    since (a smaller model, a budget set lower, the provider's counts): shortened again to
    RESTORE_SHARE of this room when it takes more, its restore entry saying so. Kept at its
    size, the fit dropped it whole, the other history summarized to make room for it first (a
    request at 70 of a budget of 600). Returns the entry saying so, for this turn's result
    (its prefix changes there), or []."""
    if win.total() <= budget:
        return []
    cap = int(win.room(budget, newest_user(win.messages)) * RESTORE_SHARE)
    if win.shown_tokens(i) <= cap:
        return []
    reason = _restored_short(win, i, 0, budget, counter, policy)
    k = next((k for k, e in enumerate(audit) if e.index == i), None)
    if reason is None or k is None:
        return []
    audit[k] = msgspec.structs.replace(audit[k], reason=reason,
                                       tokens_after=win.shown_tokens(i))
    return [audit[k]]


#: of the room a question leaves, what one restored message takes at most (as a session's
#: restored messages together, core/assembly/restore.py): the rest is the conversation's
RESTORE_SHARE = 0.25


def _restored_short(win: Window, i: int, was: int, budget: int, counter: Tokenizer,
                    policy: PreparePolicy) -> str | None:
    """Show restored message i shortened when whole it takes more than RESTORE_SHARE of the
    room, or than its outline before (``was`` tokens), whichever is more (head and tail, the
    facts of its cut part named), and say why; None: it goes whole.
    Whole, a message far over the budget was restored only to be dropped by the fit, the
    notice saying it was restored whole (a 6,805-token message in a budget of 2,000: the
    next request sent none of it, where without the restore its outline went)."""
    cap = max(int(win.room(budget, newest_user(win.messages)) * RESTORE_SHARE), was)
    if win.tokens[i] <= cap:
        return None
    got = shorten_message(win.messages[i], win.tokens[i], cap, counter, policy.fmt)
    if got is None:
        return None
    reason = (f"restored on request, shortened: whole it takes {win.tokens[i]} tokens, over "
              f"the {cap} a restored message may take of this budget; pinned for this "
              "conversation")
    win.rewrite(i, got[0], got[1], "truncated", reason)
    return reason
