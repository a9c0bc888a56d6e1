"""The gateway's calls into the state: prepare a provider request, report its usage, set
a summary ahead of need going.

Owns nothing but the seam: every request the gateway serves goes through `prepare` before it
is forwarded, `read_ahead` once its body went upstream, and `report` after the answer (and,
with `[gateway] summarizer = "upstream"`, `summarize_ahead`). `prepare` runs the state's own
`ctx/prepare` through `state.requests.call` (its lane, where it runs), as the JSON-RPC face
does, so a conversation's turns apply in arrival order whichever face they came through.
Must not touch HTTP.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ctxlayer import protocol
from ctxlayer.gateway.usage import Usage
from ctxlayer.state import Caller
from ctxlayer.state.requests import call


async def prepare(caller: Caller, fmt: str, body: dict, conversation_id: str | None, *,
                  client_session_id: str | None = None,
                  context_window: int | None = None) -> protocol.PrepareResult:
    """The request to send instead of `body` (raises ContextError for input it cannot serve).
    `client_session_id` is the client's own id of the chat read from a header; the state reads
    the ones a body carries itself."""
    params = protocol.PrepareParams(format=fmt, request=body,  # type: ignore[arg-type]
                                    conversation_id=conversation_id,
                                    client_session_id=client_session_id,
                                    context_window=context_window)
    return await call(caller, "ctx/prepare", params)


def sent_figures(caller: Caller, result: protocol.PrepareResult) -> tuple[int, int]:
    """(messages left out, messages sent shortened) of the request ``result`` sends, all of
    them as the chat's listing counts them, not only those its turn cut anew."""
    return caller.state.conversations.sent_figures(result)


def read_ahead(caller: Caller, conversation_id: str) -> None:
    """Read the facts of the conversation's next step on a worker, once its request has gone
    upstream (the gateway's turns leave it to this call); returns at once."""
    caller.state.conversations.read_ahead(caller.workspace, conversation_id)


async def report(caller: Caller, result: protocol.PrepareResult, usage: Usage,
                 refused: bool = False) -> None:
    """Tell the conversation's session what the provider counted of ``result``'s request
    (its calibration; ``refused``: a refusal's count of the prompt), and the editors of the
    workspace the budget with the provider's cache reads."""
    if not result.conversation_id:
        return
    state = caller.state
    # the provider-neutral form the conversations read: the whole prompt, and its cached part
    counted = {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
               "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens}}
    # compared with this request's own count: another of the chat may have been prepared
    # since (its report says nothing then: the chat's figures are the newer turn's)
    budget = await state.work(state.conversations.report_usage, result.conversation_id,
                              counted, caller.workspace, refused, usage.answer, result)
    if budget is not None:
        state.events.budget(caller.workspace, msgspec.structs.replace(budget, source="gateway"))


def answered(caller: Caller, result: protocol.PrepareResult, usage: Usage) -> None:
    """A request that names this answer by its id (a Responses `previous_response_id`) goes
    on in ``result``'s conversation. At once, as the answer ends: the client's next request
    may name it before the usage is reported."""
    if usage.answer_id and result.conversation_id:
        caller.state.conversations.answered_as(caller.workspace, result.conversation_id,
                                               usage.answer_id)


def summarize_ahead(caller: Caller, conversation_id: str, ask: Any, writer: str,
                    window: int | None = None) -> None:
    """Have ``ask`` (the upstream's call, upsum.py) write the conversation's next summary in
    the background, once its next step is near (core.prepare.near_budget), what it is shown
    fitted to ``window`` (its model's); returns at once."""
    caller.state.conversations.summarize_ahead(caller.workspace, conversation_id, ask, writer,
                                               window)
