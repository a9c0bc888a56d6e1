"""ctx/prepare, ctx/conversations, ctx/why, ctx/restore: chats that resend their whole history.

The conversations themselves live in `state/conversations.py`; these functions are the thin
entry points the faces call.
"""

from __future__ import annotations

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.state.caller import Caller


async def prepare(caller: Caller, p: protocol.PrepareParams) -> protocol.PrepareResult:
    raise ContextError("invalid", "ctx/prepare is not served by this build yet", field="request")


async def conversations(caller: Caller, p: protocol.Empty) -> protocol.ConversationsResult:
    return protocol.ConversationsResult(conversations=[])


async def why(caller: Caller, p: protocol.WhyParams) -> protocol.WhyResult:
    raise ContextError("invalid", "ctx/why is not served by this build yet", field="params")


async def restore(caller: Caller, p: protocol.RestoreParams) -> protocol.Empty:
    raise ContextError("invalid", "ctx/restore is not served by this build yet",
                       field="messageId")
