"""ctx/prepare, ctx/conversations, ctx/why, ctx/restore: chats that resend their whole history,
and why / restore for the sessions of ctx/assemble too.

The conversations live in `state/conversations.py` (which keeps one conversation's turns in
arrival order itself, so ctx/prepare needs no lane from the dispatch); these are the thin
entry points the faces call. What touches a live conversation runs on the loop (ctx/why's and
ctx/restore's `given` part); a session of ctx/assemble is read on a thread. A prepared turn publishes the conversation's budget to the editors of
the workspace (Conversations.prepare does it, for the gateway too).
"""

from __future__ import annotations

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.state.caller import Caller
from ctxlayer.state.requests.budgets import fitted_to, publish
from ctxlayer.state.requests.sessions import ensure_layers


async def prepare(caller: Caller, p: protocol.PrepareParams) -> protocol.PrepareResult:
    return await caller.state.conversations.prepare(caller, p)


async def session_budget(caller: Caller, p: protocol.SessionRef
                         ) -> protocol.Budget | protocol.WorkspaceSegment:
    """ctx/session/budget's part on the loop: the Budget of the chat the session backs, its
    last prepared request's as its ctx/budgetChanged said it (after a restart, as its kept
    window says it); else the segment a session of ctx/assemble is measured with (a chat's
    session holds none of its messages: measured, it said the workspace's tokens, which its
    requests never carry, and a history of 0)."""
    told = await caller.state.conversations.figures(caller.workspace, p.session_id)
    if told is not None and told[0] is not None:
        return told[0]
    return await caller.segment()


async def live_chats(caller: Caller, p: protocol.NoParams) -> dict[str, int]:
    """ctx/session/list's part on the loop: the messages of each live chat's last request,
    by its session's id."""
    live = caller.state.conversations.live_figures(caller.workspace)
    return {sid: messages for sid, (_, messages) in live.items()}


async def conversations(caller: Caller, p: protocol.NoParams) -> protocol.ConversationsResult:
    # the live ones and, after a restart, those the state folder keeps
    listed, more, warning = await caller.state.conversations.listed(caller.workspace)
    return protocol.ConversationsResult(conversations=listed, not_listed=more, warning=warning)


async def live_why(caller: Caller, p: protocol.WhyParams) -> list | None:
    """ctx/why's part on the loop: a live conversation's entries, or a kept one's not in
    memory (after a restart, before its chat's next turn); None for a session of
    ctx/assemble, whose entries its thread reads."""
    convs = caller.state.conversations
    kept = await convs.kept_why(caller.workspace, p.conversation_id, p.session_id,
                                p.message_id)
    if kept is not None:
        return kept
    if _assembled_session(caller, p):
        return None
    return convs.why(caller.workspace, p.conversation_id, p.session_id, p.message_id)


def why(caller: Caller, p: protocol.WhyParams, live: list | None) -> protocol.WhyResult:
    if live is not None:
        return protocol.WhyResult(entries=live)
    # a session of ctx/assemble: what explains its last result (session_service.py)
    sessions, sid = caller.state.sessions, p.session_id
    entries = sessions.why(caller.workspace, sid)  # type: ignore[arg-type]
    if p.message_id is not None:
        entries = [e for e in entries if e.message_id == p.message_id]
        if not entries and not sessions.holds(caller.workspace, sid,  # type: ignore[arg-type]
                                              p.message_id):
            # no entries would read as "kept whole", as for a live chat's (conversations.why)
            raise ContextError("invalid", f"this session holds no message with id "
                               f"{p.message_id!r}", field="messageId")
    return protocol.WhyResult(entries=list(entries))


async def live_restore(caller: Caller, p: protocol.RestoreParams) -> protocol.WorkspaceSegment | None:
    """ctx/restore's part on the loop: a live conversation shows the message whole from its
    next turn on (None then); a session of ctx/assemble is given the segment instead."""
    if _assembled_session(caller, p):
        return await caller.segment()
    caller.state.conversations.restore(caller.workspace, p.conversation_id, p.session_id,
                                       p.message_id)
    return None


def restore(caller: Caller, p: protocol.RestoreParams,
            segment: protocol.WorkspaceSegment | None) -> protocol.Empty:
    if segment is None:  # a live conversation's: done on the loop
        return protocol.Empty()
    # a session of ctx/assemble: the message comes back whole from its next assembly on
    state = caller.state
    ensure_layers(caller, p.session_id, segment)  # type: ignore[arg-type]
    # ctx/why shows the restore from now on (it is in the session's compaction state)
    state.sessions.restore(caller.workspace, p.session_id, p.message_id)
    # the restored message counts in the session's budget from now on
    publish(caller, fitted_to(caller, p.session_id))
    return protocol.Empty()


def _assembled_session(caller: Caller, p: protocol.WhyParams | protocol.RestoreParams) -> bool:
    """Whether the request names a session of ctx/assemble (not one backing a chat)."""
    return p.conversation_id is None and p.session_id is not None \
        and not caller.state.conversations.has_session(caller.workspace, p.session_id)
