"""ctx/segment: the current workspace segment (tree, git, agent files, selected files)."""

from __future__ import annotations

from ctxlayer import protocol
from ctxlayer.lsp.convert import parse, to_wire
from ctxlayer.lsp.errors import maps_errors
from ctxlayer.lsp.server import CtxServer


@maps_errors
async def segment(ls: CtxServer, params: dict | None) -> dict:
    """Handle ctx/segment: waits for the first scan, then answers from the cached segment."""
    parse(params, protocol.SegmentParams)
    return to_wire(await ls.segment())


def register(server: CtxServer) -> None:
    server.feature("ctx/segment")(segment)
