"""ctx/trim: fit a conversation into a budget (default: model window - reserveOutput)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from ctxlayer import protocol
from ctxlayer.lsp.convert import parse, to_wire
from ctxlayer.lsp.errors import invalid_params, maps_errors
from ctxlayer.lsp.server import CtxServer
from ctxlayer.workspace.attachments import attached_paths, read_attachments

log = logging.getLogger(__name__)


@maps_errors
async def trim(ls: CtxServer, params: dict | None) -> dict:
    """Handle ctx/trim on a worker thread; going over budget is reported, not an error."""
    from ctxlayer.core.trim import TrimOptions
    from ctxlayer.core.trim import trim as trim_messages
    from ctxlayer.tokenizers import memo_for

    req = parse(params, protocol.TrimParams)
    req.messages = parse(req.messages, list[protocol.Message], "messages")
    model = ls.model(req.model)
    if req.reserve_output is not None and req.reserve_output < 0:
        raise invalid_params("reserveOutput", "must not be negative")
    budget = req.budget if req.budget is not None else ls.default_budget(model, req.reserve_output)
    options = TrimOptions(strategy=req.strategy or "pipeline")
    docs = tuple(req.docs or ())
    attachments = {}
    attached = attached_paths(req.messages)
    if attached:  # T2: files attached to messages, read inside the workspace only
        root = ls.root if ls.root is not None else Path.cwd()
        attachments = await asyncio.to_thread(read_attachments, root, attached)
    memo = memo_for(model)  # derived texts shared by every trim with this tokenizer
    report = await ls.daemon.tokenizers.run(
        model,
        lambda c: trim_messages(req.messages, budget, c, options=options, docs=docs, memo=memo,
                                attachments=attachments),
        size=1 << 62,  # always on a worker thread, under the tokenizer lock
    )
    log.info("trim: %d messages in, %d kept, %d/%d tokens", len(req.messages),
             len(report.messages), report.tokens, budget)
    return to_wire(protocol.TrimResult(messages=report.messages, tokens=report.tokens,
                                       budget=report.budget, dropped=report.dropped,
                                       truncated=report.truncated))


def register(server: CtxServer) -> None:
    server.feature("ctx/trim")(trim)
