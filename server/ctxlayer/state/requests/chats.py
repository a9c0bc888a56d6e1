"""ctx/prepare, ctx/conversations, ctx/why, ctx/restore: chats that resend their whole history.

The conversations live in `state/conversations.py` (which keeps one conversation's turns in
arrival order itself, so these need no lane from the dispatch); these are the thin entry
points the faces call. A prepared turn publishes the conversation's budget to the editors of
the workspace (Conversations.prepare does it, for the gateway too).
"""

from __future__ import annotations

from ctxlayer import protocol
from ctxlayer.state.caller import Caller


async def prepare(caller: Caller, p: protocol.PrepareParams) -> protocol.PrepareResult:
    return await caller.state.conversations.prepare(caller, p)


async def conversations(caller: Caller, p: protocol.Empty) -> protocol.ConversationsResult:
    return protocol.ConversationsResult(
        conversations=caller.state.conversations.list(caller.workspace))


async def why(caller: Caller, p: protocol.WhyParams) -> protocol.WhyResult:
    return protocol.WhyResult(entries=caller.state.conversations.why(
        caller.workspace, p.conversation_id, p.session_id, p.message_id))


async def restore(caller: Caller, p: protocol.RestoreParams) -> protocol.Empty:
    caller.state.conversations.restore(caller.workspace, p.conversation_id, p.session_id,
                                       p.message_id)
    return protocol.Empty()
