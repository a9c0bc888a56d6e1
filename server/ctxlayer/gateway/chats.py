"""The gateway's two calls into the state: prepare a provider request, report its usage.

Owns nothing but the seam: every request the gateway serves goes through `prepare` before it
is forwarded and through `report` after the answer, so the state's conversation logic is the
one the JSON-RPC `ctx/prepare` runs too. Must not touch HTTP.
"""

from __future__ import annotations

from typing import Any

from ctxlayer import protocol
from ctxlayer.gateway.usage import Usage


async def prepare(state: Any, caller: Any, fmt: str, body: dict,
                  conversation_id: str | None) -> protocol.PrepareResult:
    """The request to send instead of `body` (raises ContextError for input it cannot serve)."""
    # Until the state's ctx/prepare is there, the request goes through unchanged.
    return protocol.PrepareResult(
        request=body, conversation_id=conversation_id or "", session_id="", tokens=0,
        budget=0, dropped=[], truncated=[], compacted=False, cache_reuse_tokens=0)


async def report(state: Any, caller: Any, result: protocol.PrepareResult,
                 usage: Usage) -> None:
    """Tell the conversation's session what the provider counted, and the editors."""
    return None
