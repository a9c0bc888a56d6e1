"""The state of one ctxlayer process, shared by its two faces (JSON-RPC and the HTTP gateway).

Owns: `State` (tokenizers, live workspaces, the session service, the lanes that keep each
session's requests in arrival order, and the events the faces forward to editors) and the
request functions in `state/requests/`, one per protocol method, declared in one table
(`state.requests.REQUESTS`). A face parses, finds the `Caller` (who asks: a connection's
options and workspace, or the gateway's), calls the function, and converts the result out.
Must not: import pygls, lsprotocol or the HTTP stack; talk to clients except through `Caller`
callbacks and `State.events`.
"""

from __future__ import annotations

from ctxlayer.state.caller import Caller
from ctxlayer.state.state import State

__all__ = ["Caller", "State"]
