"""ctx/prepare, ctx/conversations, ctx/why, ctx/restore: chats that resend their whole history,
and why / restore for the sessions of ctx/assemble too.

The conversations live in `state/conversations.py` (which keeps one conversation's turns in
arrival order itself, so these need no lane from the dispatch); these are the thin entry
points the faces call. A prepared turn publishes the conversation's budget to the editors of
the workspace (Conversations.prepare does it, for the gateway too).
"""

from __future__ import annotations

from ctxlayer import protocol
from ctxlayer.state.caller import Caller
from ctxlayer.state.requests.budgets import publish
from ctxlayer.state.requests.sessions import ensure_layers


async def prepare(caller: Caller, p: protocol.PrepareParams) -> protocol.PrepareResult:
    return await caller.state.conversations.prepare(caller, p)


async def conversations(caller: Caller, p: protocol.Empty) -> protocol.ConversationsResult:
    return protocol.ConversationsResult(
        conversations=caller.state.conversations.list(caller.workspace))


async def why(caller: Caller, p: protocol.WhyParams) -> protocol.WhyResult:
    state = caller.state
    if p.conversation_id is None and p.session_id is not None \
            and not state.conversations.has_session(caller.workspace, p.session_id):
        # a session of ctx/assemble: what its last assembly cut (this process), else its log
        entries = state.last_assembly_audit.get((caller.workspace, p.session_id))
        if entries is None:
            entries = await state.work(state.sessions.audit, caller.workspace, p.session_id,
                                       None)
        if p.message_id is not None:
            entries = [e for e in entries if e.message_id == p.message_id]
        return protocol.WhyResult(entries=list(entries))
    return protocol.WhyResult(entries=state.conversations.why(
        caller.workspace, p.conversation_id, p.session_id, p.message_id))


async def restore(caller: Caller, p: protocol.RestoreParams) -> protocol.Empty:
    state = caller.state
    if p.conversation_id is None and p.session_id is not None \
            and not state.conversations.has_session(caller.workspace, p.session_id):
        # a session of ctx/assemble: the message comes back whole from its next assembly on
        await ensure_layers(caller, p.session_id)
        entry = await state.work(state.sessions.restore, caller.workspace, p.session_id,
                                 p.message_id)
        key = (caller.workspace, p.session_id)
        if key in state.last_assembly_audit:  # ctx/why says so until the next assembly
            state.last_assembly_audit[key] = [*state.last_assembly_audit[key], entry]
        # the restored message counts in the session's budget from now on
        publish(caller, await state.work(state.sessions.budget, caller.workspace, p.session_id))
        return protocol.Empty()
    state.conversations.restore(caller.workspace, p.conversation_id, p.session_id,
                                p.message_id)
    return protocol.Empty()
