"""What a live conversation's result says about what its window did: the audit of the last
result, how many messages it leaves out or shows shortened, the notice line for the user, and
a branch's first turn telling everything the window it took over had done.

Owns: `audit_of`, `left_out`, `shown_shortened`, `told_anew`, `notice`. Pure; the engine
(engine.py) calls `notice` for each turn it steps.
"""

from __future__ import annotations

import dataclasses

from ctxlayer.core.prepare.model import (
    ConversationState,
    Told,
    Turn,
    shortened_audit,
    summarized_audit,
)
from ctxlayer.core.prepare.restore import RESTORED
from ctxlayer.core.text import counted
from ctxlayer.protocol import AuditEntry


def audit_of(state: ConversationState) -> list[AuditEntry]:
    """Every entry that explains the last result: messages summarized, shortened, restored and
    dropped, oldest first."""
    return [*_summarized(state), *_shortened(state), *state.restored_audit, *state.dropped]


def left_out(turn: Turn) -> int:
    """How many of the client's messages ``turn``'s result leaves out, whichever turn cut
    them: those its summaries stand in for (a chunk is one message of the result) and those
    the last resort dropped. The turn's own `dropped` holds only what this turn cut anew."""
    return len(turn.state.messages) - (len(turn.messages) - len(turn.state.chunks))


def shown_shortened(turn: Turn) -> int:
    """How many messages ``turn``'s result shows shortened (outlined or cut to fit), whichever
    turn shortened them: the turn's own `truncated` holds only this turn's new ones. Not a
    message shown with lines recalled for it, nor one restored (each audited as restored)."""
    st = turn.state
    gone = {e.index for e in st.dropped}
    return sum(1 for i, rw in st.rewrites.items()
               if i not in gone and rw[2].action != "restored")


def told_anew(turn: Turn) -> Turn:
    """``turn`` as the first of a conversation that started from another one's window (a
    branch): everything that window summarized, shortened, restored or cut is new to this
    conversation's client, and said in the turn as a step of its own would say it."""
    st = turn.state
    summarized, shortened = _summarized(st), _shortened(st)
    # its notice says all of that too: the turn's own says only what it did anew (a chat
    # taking over a window that outlined a log was told the outline, its notice None)
    said = notice(len(summarized), sum(e.tokens_before for e in summarized), [],
                     list(st.dropped), [e for e in shortened if e.action != "restored"],
                     list(st.restored_audit), turn.budget)
    told = Told(dropped=(*summarized, *st.dropped), truncated=tuple(shortened),
                restored=st.restored_audit, notice=said or turn.notice)
    # the same request sent again is told this again (`_as_before`)
    return dataclasses.replace(turn, dropped=list(told.dropped),
                               truncated=list(told.truncated), restored=list(told.restored),
                               notice=told.notice, state=dataclasses.replace(st, told=told))


def _summarized(state: ConversationState) -> list[AuditEntry]:
    return summarized_audit(state.chunks, state.verbatim)


def _shortened(state: ConversationState) -> list[AuditEntry]:
    return shortened_audit(state.rewrites)



def _k(tokens: int) -> str:
    if tokens < 1000:
        return str(tokens)
    if tokens < 100_000 and tokens % 1000:
        return f"{tokens / 1000:.1f}k"
    return f"{round(tokens / 1000)}k"


def notice(summarized: int, summarized_tokens: int, outlined: list[AuditEntry],
            dropped: list[AuditEntry], truncated: list[AuditEntry],
            restored: list[AuditEntry], budget: int, recalled: int = 0,
            writer: str = "offline") -> str | None:
    """One line for the user when this turn summarized, cut or restored something."""
    did = []
    if summarized:
        by = f"; summary written {writer}" if writer != "offline" else ""
        did.append(f"summarized {counted(summarized, 'older message')} "
                   f"({_k(summarized_tokens)} tokens{by})")
    if outlined:
        saved = sum(e.tokens_before - e.tokens_after for e in outlined)
        did.append(f"outlined {counted(len(outlined), 'older message')} ({_k(saved)} tokens "
                   "saved)")
    if dropped:
        did.append(f"dropped {counted(len(dropped), 'message')} "
                   f"({_k(sum(e.tokens_before for e in dropped))} tokens)")
    if truncated:
        did.append(f"shortened {counted(len(truncated), 'message')}")
    parts = [" and ".join(did) + f" to fit {_k(budget)}"] if did else []
    short = sum(e.reason != RESTORED for e in restored)
    if restored and not short:
        parts.append(f"restored {counted(len(restored), 'message')} whole")
    elif restored:
        parts.append(f"restored {counted(len(restored), 'message')}, {short} of them too big "
                     "to go whole: shortened")
    if recalled:
        parts.append("recalled the exact earlier lines the newest message names")
    return "ctxlayer: " + "; ".join(parts) if parts else None
