"""The request and notification handlers, one module per method family.

Each module has `register(server)`, called once per connection in the order below (the order
matters: `lifecycle` sets up the state the others read). To add a family, write a module with
`register(server)` and add it to MODULES; see lsp/server.py for the state and the hooks
(`segment_listeners`, `ready_listeners`, `close_listeners`, `daemon.service`).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from ctxlayer.lsp.handlers import (
    assemble,
    count,
    inspector,
    lifecycle,
    prompt,
    segment,
    session,
    trim,
)

if TYPE_CHECKING:
    from ctxlayer.lsp.server import CtxServer

# Order matters!
MODULES: list[ModuleType] = [
    lifecycle,
    segment,
    prompt,
    count,
    trim,
    session,
    assemble,
    inspector,
]


def register_all(server: CtxServer) -> None:
    for module in MODULES:
        module.register(server)
