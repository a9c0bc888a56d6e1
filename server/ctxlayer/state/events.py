"""Events a face forwards to its clients: budgets (for the editors' status bars), a live
workspace's changed segment, and one-line messages for the user. Subscribers are plain
callbacks called on the event loop.

Must not: know who the subscribers are (a JSON-RPC connection listens for its workspace).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from ctxlayer.protocol import Budget, SegmentChanged

if TYPE_CHECKING:
    from ctxlayer.state.live import LiveWorkspace

log = logging.getLogger(__name__)

#: workspace, budget, the caller it concerns (None: every client of the workspace)
BudgetListener = Callable[[str, Budget, object], None]
MessageListener = Callable[[str, str, str], None]  # workspace, level, text
#: the live workspace whose segment changed (its callers' clients are told), the change
SegmentListener = Callable[["LiveWorkspace", SegmentChanged], None]


class Events:
    def __init__(self) -> None:
        self.budget_listeners: list[BudgetListener] = []
        self.message_listeners: list[MessageListener] = []
        self.segment_listeners: list[SegmentListener] = []
        #: workspace -> (conversation id, session id, source) of the chat that last sent a
        #: request there: the one the status bars follow
        self.live: dict[str, tuple[str | None, str | None, str | None]] = {}

    def budget(self, workspace: str, budget: Budget, caller: object = None, *,
               request: bool = False, alone: bool = False) -> Budget:
        """A budget changed. A session's concerns the caller that changed it (`caller`); a live
        chat's (prepare, the gateway) every editor of the workspace (`caller` None), since
        their status bars show the chat that last went through, unless it is told to each
        caller `alone` (a re-measure: each editor's own window). `request`: a chat sent a
        request (a prepared turn, an assembly), so it becomes the workspace's live chat.
        Returns the budget as the listeners got it (`live` set)."""
        budget = self.stamped(workspace, budget, request)
        if budget.live and not alone:
            caller = None  # every editor of the workspace follows the live chat
        for listener in list(self.budget_listeners):
            try:
                listener(workspace, budget, caller)
            except Exception:
                log.exception("a budget listener failed")
        return budget

    def stamped(self, workspace: str, budget: Budget, request: bool) -> Budget:
        """The budget with `live` set, and the live chat's identity kept when something else
        than a request re-measured that chat (a file event re-measures its session); a
        request's chat becomes the live one (on the loop: the only writer)."""
        if request:
            self.live[workspace] = (budget.conversation_id, budget.session_id, budget.source)
        return self.as_seen(workspace, budget, request)

    def as_seen(self, workspace: str, budget: Budget, request: bool) -> Budget:
        """What `stamped` returns, changing nothing (a thread that publishes answers with it
        while the loop sends the event)."""
        if request:
            return msgspec.structs.replace(budget, live=True)
        cid, sid, source = self.live.get(workspace, (None, None, None))
        same = (budget.conversation_id == cid if budget.conversation_id is not None
                else sid is not None and budget.session_id == sid)
        if not same:
            return msgspec.structs.replace(budget, live=False)
        return msgspec.structs.replace(budget, live=True, conversation_id=cid,
                                       source=budget.source or source)

    def not_live(self, workspace: str, conversation_ids: list[str]) -> None:
        """None of ``conversation_ids`` is the workspace's live chat any more (asked beside a
        chat whose request was refused: `asides.beside_refused`); no other becomes it."""
        if self.live.get(workspace, (None,))[0] in conversation_ids:
            del self.live[workspace]

    def live_chat(self, workspace: str) -> tuple[str | None, str | None, str | None] | None:
        """(conversation id, session id, source) of the workspace's live chat, if any."""
        return self.live.get(workspace)

    def message(self, workspace: str, level: str, text: str) -> None:
        """Something the user should read (a recovered database, a config change)."""
        log.log(logging.WARNING if level != "info" else logging.INFO, "%s", text)
        for listener in list(self.message_listeners):
            try:
                listener(workspace, level, text)
            except Exception:
                log.exception("a message listener failed")

    def segment(self, live: LiveWorkspace, change: SegmentChanged) -> None:
        """A live workspace's segment changed (once per change, however many callers)."""
        for listener in list(self.segment_listeners):
            try:
                listener(live, change)
            except Exception:
                log.exception("a segment listener failed")
