"""ctx/assemble and ctx/session/compact; the server-to-client ctx/summarize.

The core decides whether a compaction needs a summary. When it does and the client declared
`capabilities.experimental.ctxlayer.summarize`, the handler asks the client (ctx/summarize)
and waits at most `[session] summarizer_timeout` seconds; a slow, failing or absent answer
falls back to the offline extractive summary, so the turn is never blocked longer than that.
The workspace segment is read once at the start of an assembly: a change that lands during
one applies to the next.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import msgspec

from ctxlayer import protocol
from ctxlayer.lsp.convert import parse, to_wire
from ctxlayer.lsp.errors import maps_errors
from ctxlayer.lsp.handlers.session import call, service, workspace
from ctxlayer.lsp.server import CtxServer

log = logging.getLogger(__name__)


def can_summarize(ls: CtxServer) -> bool:
    experimental = getattr(ls.client_capabilities, "experimental", None)
    if not isinstance(experimental, dict):
        return False
    ours = experimental.get("ctxlayer")
    return isinstance(ours, dict) and ours.get("summarize") is True


def timeout(ls: CtxServer) -> float:
    return float(getattr(getattr(ls.config, "session", None), "summarizer_timeout", 5.0))


async def segment_layers(ls: CtxServer, session_id: str, segment: protocol.WorkspaceSegment,
                         spec: protocol.SystemPromptParams | None = None) -> Any:
    """The system layers of an assembly: the full layered prompt when asked, else the segment."""
    from ctxlayer.core.tokens import message_tokens
    from ctxlayer.store.sessions import SystemLayers

    if spec is None:
        if not segment.text:
            return SystemLayers()
        msg = protocol.Message(role="system", content=segment.text, id="ctx:workspace",
                               pinned=True, hide=True)
        tokens = await ls.daemon.tokenizers.run(ls.model(), lambda c: message_tokens(msg, c),
                                                size=len(segment.text))
        return SystemLayers(messages=[msg], cache_boundary=None, workspace_tokens=tokens)
    from ctxlayer.core.prompt import build_system_prompt, spec_from_params
    from ctxlayer.tokenizers import prompt_traits

    model = ls.model(spec.model)
    built_spec = spec_from_params(spec, traits=prompt_traits(model),
                                  workspace_parts=[(p.name, p.text) for p in segment.parts])

    def build(counter: Any) -> SystemLayers:
        built = build_system_prompt(built_spec, counter)
        ws = sum(message_tokens(m, counter) for m in built.messages if m.id == "ctx:workspace")
        return SystemLayers(messages=built.messages, cache_boundary=built.cache_boundary,
                            workspace_tokens=ws)

    return await ls.daemon.tokenizers.run(model, build, size=1 << 62)


async def ask_summary(ls: CtxServer, request: Any) -> str | None:
    """The client's summary, or None when it fails or is slower than the timeout."""
    params = protocol.SummarizeParams(messages=request.messages,
                                      instructions=request.instructions,
                                      max_tokens=request.max_tokens)
    try:
        raw = await asyncio.wait_for(
            ls.protocol.send_request_async("ctx/summarize", to_wire(params)), timeout(ls))
        text = msgspec.convert(raw, protocol.SummarizeResult).text
        return text if text.strip() else None
    except TimeoutError:
        log.warning("ctx/summarize: no answer within %.1f s; offline summary used", timeout(ls))
    except Exception as exc:
        log.warning("ctx/summarize failed (%s); offline summary used", exc)
    return None


async def run_assembly(ls: CtxServer, session_id: str, **kwargs: Any) -> Any:
    """Assemble, asking the client for a summary when the core needs one."""
    summarize = can_summarize(ls)
    out = await call(ls, "assemble", session_id, client_summarizer=summarize, **kwargs)
    if out.needs_summary is not None:
        text = await ask_summary(ls, out.needs_summary)
        out = await call(ls, "assemble", session_id, client_summarizer=summarize,
                         summary_text=text, offline=text is None, **kwargs)
    return out


@maps_errors
async def assemble(ls: CtxServer, params: dict | None) -> dict:
    req = parse(params, protocol.AssembleParams)
    segment = await ls.segment()  # one snapshot per assembly
    service(ls)
    system = await segment_layers(ls, req.session_id, segment, req.system_prompt)
    out = await run_assembly(ls, req.session_id, budget=req.budget, system=system)
    result = out.result
    log.info("assemble %s: %d messages, %d/%d tokens%s", req.session_id, len(result.messages),
             result.tokens.total, result.budget, ", compacted" if result.compacted else "")
    return to_wire(result)


@maps_errors
async def compact(ls: CtxServer, params: dict | None) -> dict:
    req = parse(params, protocol.SessionCompactParams)
    if req.keep_recent is not None and req.keep_recent < 0:
        from ctxlayer.lsp.errors import invalid_params

        raise invalid_params("keepRecent", "must not be negative")
    segment = await ls.segment()
    system = await segment_layers(ls, req.session_id, segment)
    svc = service(ls)
    before, _ = await asyncio.to_thread(svc.summary_of, workspace(ls), req.session_id)
    await run_assembly(ls, req.session_id, system=system, force=True,
                       keep_recent=req.keep_recent)
    after, summary = await asyncio.to_thread(svc.summary_of, workspace(ls), req.session_id)
    if summary is None:
        summary = protocol.Message(role="user", content="", id="ctx:summary:none", kind="summary")
    return to_wire(protocol.SessionCompactResult(summary=summary, replaced=after - before))


def register(server: CtxServer) -> None:
    server.feature("ctx/assemble")(assemble)
    server.feature("ctx/session/compact")(compact)
