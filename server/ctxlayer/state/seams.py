"""The State, a Caller and a live chat as the engines the State makes see them: protocols.

`Conversations` and its `Upkeep` are made by the State and handed the State and each request's
Caller; importing `state.py` or `caller.py` from them would be an import circle (the State
imports them; the Caller names the State). These protocols name what they use, typed for
real, so nothing at that seam is `Any`. `State` and `Caller` match them as they are (the
architecture tests check that each attribute named here exists).
Must not: import `state.py`, `caller.py` or `conversations.py`, or hold any code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ctxlayer import protocol

if TYPE_CHECKING:
    from ctxlayer.config import Config
    from ctxlayer.core.formats.common import Decoded
    from ctxlayer.core.prepare import ConversationState, persist
    from ctxlayer.state.events import Events
    from ctxlayer.state.lanes import Lanes
    from ctxlayer.state.policy import WorkspacePolicy
    from ctxlayer.state.session_service import SessionService
    from ctxlayer.state.tokens import Tokenizers

T = TypeVar("T")


class Host(Protocol):
    """What the live chats use of the State (state.py)."""

    tokenizers: Tokenizers
    events: Events
    lanes: Lanes

    @property
    def sessions(self) -> SessionService: ...

    async def work(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...

    def keep(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Awaitable[T]: ...


class Asker(Protocol):
    """What the live chats and the daemon's gateway use of a Caller (caller.py)."""

    source: protocol.Source
    options: protocol.InitializationOptions
    root: Path | None
    opened_as: Path | None
    config: Config | None

    @property
    def workspace(self) -> str: ...

    @property
    def policy(self) -> WorkspacePolicy: ...

    def model(self, requested: str | None = None) -> str | None: ...

    def default_budget(self, model: str | None, reserve_output: int | None = None) -> int: ...


class Chat(Protocol):
    """What the upkeep of a live chat uses of its Conversation (conversations.py)."""

    workspace: str
    conversation_id: str
    session_id: str
    model: str
    state: ConversationState | None
    budget: int
    tokens: int
    tools_tokens: int
    bias: float
    reports: int  # usage reports taken (a bias read before the last one is older)
    kept: list[tuple[str, int, persist.Snapshot]]  # (id, turn, window): upkeep.Kept
    id_kept: bool  # a window is kept under its id (upkeep.Found)
    kept_beyond: bool  # its family keeps older windows than those read (upkeep.Found)
    turn: int
    written: ConversationState | None
    hashed: persist.Hashed | None  # its messages' hashes, as the keeping thread last took them
    decoded: Decoded | None  # its last turn's request as read (its payload: the client's)
    counted_with: str
    left_behind: bool  # not listed (an edit's chain left behind, a request beside a chat)
    kept_listed: bool | None  # whether its kept window is listed, as this process wrote it

    def info(self) -> protocol.ConversationInfo: ...


class GatewayStarter(Protocol):
    """Starts the HTTP face for a caller whose workspace enables it (`State.gateway_starter`),
    and stops it when the daemon ends (`State.stop_gateway`)."""

    def __call__(self, asking: Asker) -> Awaitable[None]: ...

    async def close(self) -> None: ...
