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
        budget = measured if measured is not None else svc.budget(caller.workspace, session_id)
    else:
        budget = svc.budget(caller.workspace, session_id, budget=low.budget)
    return with_window(caller, budget)


def with_window(caller: Caller, budget: protocol.Budget) -> protocol.Budget:
    """`budget` with the window its limit was derived from, unless it carries one (a live
    chat's, its request's): the window the caller names, else its model's, the longest one
    where the limit is over the usual (a session kept at 500,000 on a model that opens 1M).
    Before, ctx/session/budget said null, and an editor that named a 16,000-token window was
    pushed gpt-4o's 128,000 beside the limit of 8,000 fitted to its 16,000."""
    if budget.window is not None:
        return budget
    from ctxlayer.tokenizers import model_info

    window = caller.options.context_window
    if window is None:
        window = model_info(budget.model).context_window
        if budget.limit > window:
            # the model's long window; for a model the table does not know (its window a
            # guess), the budget it was given says the window is at least that
            window = max(caller.widest_window(budget.model) or budget.limit, window)
    return msgspec.structs.replace(budget, window=window)


def publish(caller: Caller, budget: protocol.Budget, *, request: bool = False,
            alone: bool = False) -> protocol.Budget:
    """Push a session's budget to the caller's editor (with its window: `with_window`), and
    to every editor of the workspace when it is the live chat; `request`: the session's chat
    sent a request, so it is the workspace's live chat from now on; `alone`: to the caller's
    editor only, also for the live chat (a re-measure tells each editor what its own window
    fits the session to)."""
    budget = with_window(caller, budget)
    # from the loop, where the faces write to their connections (a lane or a worker calls
    # this from a thread)
    events = caller.state.events
    on_loop(functools.partial(events.budget, caller.workspace, budget, caller,
                              request=request, alone=alone))
    return events.as_seen(caller.workspace, budget, request)
