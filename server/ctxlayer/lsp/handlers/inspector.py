"""ctx/inspect: the inspector page (one self-contained HTML string) for a conversation trimmed
into a budget, or for a session's assembled context once sessions are served.

Owns the request's validation and the gathering of counts; the page itself is rendered by
`ctxlayer.inspector` (pure). Must not write files or open a browser: the client shows the HTML.
"""

from __future__ import annotations

import inspect as inspect_module

import msgspec

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.lsp.convert import parse, to_wire
from ctxlayer.lsp.errors import invalid_params, maps_errors
from ctxlayer.lsp.server import CtxServer


@maps_errors
async def inspect(ls: CtxServer, params: dict | None) -> dict:
    """Handle ctx/inspect on a worker thread (trimming and counting can be large)."""
    from ctxlayer.inspector import render_inspector

    req = parse(params, protocol.InspectParams)
    model = ls.model(req.model)
    if req.budget is not None and req.budget <= 0:
        raise invalid_params("budget", f"must be a positive number of tokens, got {req.budget}")
    if req.session_id is not None:
        data = await _session_data(ls, req, model)
    elif req.messages is not None:
        data = await _conversation_data(ls, req, model)
    else:
        raise invalid_params("messages", "give `sessionId` or `messages` to inspect")
    return to_wire(protocol.InspectResult(html=render_inspector(data)))


def _window(ls: CtxServer, model: str | None, budget: int) -> int:
    from ctxlayer.tokenizers import model_info

    return max(ls.options.context_window or model_info(model).context_window, budget)


async def _conversation_data(ls: CtxServer, req: protocol.InspectParams, model: str | None):
    from ctxlayer.inspector import inspect_conversation

    budget = req.budget if req.budget is not None else ls.default_budget(model)
    messages = req.messages or []
    return await ls.daemon.tokenizers.run(
        model,
        lambda c: inspect_conversation(messages, budget, c, model=model or "default",
                                       window=_window(ls, model, budget)),
        size=1 << 62,
    )


async def _session_data(ls: CtxServer, req: protocol.InspectParams, model: str | None):
    """A session's page: what ctx/assemble produces for it now (kept messages as bars, the
    dropped ones in the audit table), through the registered ctx/assemble handler."""
    from ctxlayer.core.tokens import OPENAI_FORMAT, message_tokens
    from ctxlayer.inspector import build_inspector_data

    assemble = ls.protocol.fm.features.get("ctx/assemble")
    if assemble is None:
        raise ContextError("unknown_session",
                           f"unknown session {req.session_id!r}: this daemon serves no sessions",
                           field="sessionId")
    # pygls stores the handler with the server already bound: it takes the params only
    raw = assemble({"sessionId": req.session_id, "budget": req.budget})
    if inspect_module.isawaitable(raw):
        raw = await raw
    result = msgspec.convert(raw, protocol.AssembleResult)
    t = result.tokens
    layers = {"system": t.system, "workspace": t.workspace, "rules": t.rules,
              "working": t.working, "history": t.history}

    def build(counter):
        tokens = [message_tokens(m, counter) for m in result.messages]
        return build_inspector_data(
            result.messages, tokens, model=model or "default",
            window=_window(ls, model, result.budget), budget=result.budget,
            dropped=result.dropped, truncated=result.truncated, layers=layers,
            cache_boundary=result.cache_boundary, compaction_at=int(result.budget * 0.7),
            session_id=req.session_id, title=f"ctxlayer · session {req.session_id}",
            overhead=OPENAI_FORMAT.reply_priming,
        )

    return await ls.daemon.tokenizers.run(model, build, size=1 << 62)


def register(server: CtxServer) -> None:
    server.feature("ctx/inspect")(inspect)
