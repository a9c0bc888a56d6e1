"""Budgets pushed to the editors from the request functions: one place, so that a session's
budget always carries its model's window and says whether its chat is now the live one.
Must not: measure anything (the session service does) or import a request module.
"""

from __future__ import annotations

import functools

import msgspec

from ctxlayer import protocol
from ctxlayer.state.caller import Caller
from ctxlayer.state.requests.place import on_loop


def publish(caller: Caller, budget: protocol.Budget, *, request: bool = False,
            everyone: bool = False) -> protocol.Budget:
    """Push a session's budget to the editors (with the model's window); `request`: the
    session's chat sent a request, so it is the workspace's live chat from now on;
    `everyone`: every editor of the workspace hears it (the state re-measured the session),
    not only the caller's."""
    if budget.window is None:
        from ctxlayer.tokenizers import model_info

        budget = msgspec.structs.replace(budget,
                                         window=model_info(budget.model).context_window)
    # from the loop, where the faces write to their connections (a lane or a worker calls
    # this from a thread)
    events = caller.state.events
    on_loop(functools.partial(events.budget, caller.workspace, budget,
                              None if everyone else caller, request=request))
    return events.as_seen(caller.workspace, budget, request)
