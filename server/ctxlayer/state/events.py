"""Events a face forwards to its clients: budgets (for the editors' status bars) and one-line
messages for the user. Subscribers are plain callbacks called on the event loop.

Must not: know who the subscribers are (a JSON-RPC connection subscribes for its workspace).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ctxlayer.protocol import Budget

log = logging.getLogger(__name__)

#: workspace, budget, the caller it concerns (None: every client of the workspace)
BudgetListener = Callable[[str, Budget, object], None]
MessageListener = Callable[[str, str, str], None]  # workspace, level, text


class Events:
    def __init__(self) -> None:
        self.budget_listeners: list[BudgetListener] = []
        self.message_listeners: list[MessageListener] = []

    def budget(self, workspace: str, budget: Budget, caller: object = None) -> None:
        """A budget changed. A session's concerns the caller that changed it (`caller`); a live
        chat's (prepare, the gateway) every editor of the workspace (`caller` None), since
        their status bars show the chat that last went through."""
        for listener in list(self.budget_listeners):
            try:
                listener(workspace, budget, caller)
            except Exception:
                log.exception("a budget listener failed")

    def message(self, workspace: str, level: str, text: str) -> None:
        """Something the user should read (a recovered database, a config change)."""
        log.log(logging.WARNING if level != "info" else logging.INFO, "%s", text)
        for listener in list(self.message_listeners):
            try:
                listener(workspace, level, text)
            except Exception:
                log.exception("a message listener failed")
