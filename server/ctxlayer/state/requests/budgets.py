"""Budgets pushed to the editors from the request functions: one place, so that a session's
budget always carries its model's window and says whether its chat is now the live one, and
its limit is the one its next assembly fits to (`fitted_to`: the session's own, else what
the window its client names lowers it to).
Must not: measure anything itself (it asks the session service) or import a request module.
"""

from __future__ import annotations

import functools

import msgspec

from ctxlayer import protocol
from ctxlayer.state.caller import Caller
from ctxlayer.state.requests.place import on_loop


class Lowered(msgspec.Struct, frozen=True):
    """A session's own budget over the window its client now names, and what an assembly
    at the session's own budget fits to instead."""

    kept: int
    window: int
    budget: int
    model: str

    def said(self) -> str:
        return (f"the session's budget of {self.kept:,} tokens is over the {self.window:,}-"
                f"token context window of {self.model}: assembled to {self.budget:,}, the "
                "model's default budget (ctx/session/configure with resetBudget makes it the "
                "session's)")


def lowered(caller: Caller, session_id: str) -> Lowered | None:
    """What the window the caller names lowers the session's own budget to (set under a
    bigger window: the editor now says a smaller `contextWindow`, or another editor opened
    it), else None. The session keeps its budget: a bigger window takes it again."""
    svc = caller.state.sessions
    kept = svc.budget_of(caller.workspace, session_id)
    model = svc.model_of(caller.workspace, session_id)
    window = caller.widest_window(model)
    if window is None or kept <= window:
        return None
    return Lowered(kept, window, caller.default_budget(model), model)


def fitted_to(caller: Caller, session_id: str,
              measured: protocol.Budget | None = None) -> protocol.Budget:
    """The session's budget as its next assembly at its own budget fits it: `measured` (the
    service's figure at the session's own budget, measured now when not given), unless the
    window lowers that budget; then measured at the lowered one (no notice: editors show
    each push's, and the assembly that lowers it says why). Before,
    ctx/session/budget and every push but an assembly's said the kept 100,000 while
    assemblies fitted 8,000 for a 16,000-token window."""
    svc = caller.state.sessions
    low = lowered(caller, session_id)
    if low is None:
        return measured if measured is not None else svc.budget(caller.workspace, session_id)
    return svc.budget(caller.workspace, session_id, budget=low.budget)


def publish(caller: Caller, budget: protocol.Budget, *, request: bool = False,
            alone: bool = False) -> protocol.Budget:
    """Push a session's budget to the caller's editor (with the model's window), and to
    every editor of the workspace when it is the live chat; `request`: the session's chat
    sent a request, so it is the workspace's live chat from now on; `alone`: to the caller's
    editor only, also for the live chat (a re-measure tells each editor what its own window
    fits the session to)."""
    if budget.window is None:
        from ctxlayer.tokenizers import model_info

        budget = msgspec.structs.replace(budget,
                                         window=model_info(budget.model).context_window)
    # from the loop, where the faces write to their connections (a lane or a worker calls
    # this from a thread)
    events = caller.state.events
    on_loop(functools.partial(events.budget, caller.workspace, budget, caller,
                              request=request, alone=alone))
    return events.as_seen(caller.workspace, budget, request)
