"""ctx/systemPrompt: the layered system prompt, the workspace segment as its cacheable part."""

from __future__ import annotations

from ctxlayer import protocol
from ctxlayer.lsp.convert import parse, to_wire
from ctxlayer.lsp.errors import maps_errors
from ctxlayer.lsp.server import CtxServer


@maps_errors
async def system_prompt(ls: CtxServer, params: dict | None) -> dict:
    """Handle ctx/systemPrompt: segment parts in, built on a worker thread."""
    from ctxlayer.core.prompt import build_system_prompt, spec_from_params
    from ctxlayer.tokenizers import prompt_traits

    req = parse(params, protocol.SystemPromptParams)
    model = ls.model(req.model)
    segment = await ls.segment()
    spec = spec_from_params(req, traits=prompt_traits(model),
                            workspace_parts=[(p.name, p.text) for p in segment.parts])
    built = await ls.daemon.tokenizers.run(model, lambda c: build_system_prompt(spec, c),
                                           size=1 << 62)
    return to_wire(built.to_result())


def register(server: CtxServer) -> None:
    server.feature("ctx/systemPrompt")(system_prompt)
