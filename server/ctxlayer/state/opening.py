"""A caller's workspace opens here, and the state follows its changes itself.

Owns: the one place a face opens a caller's workspace (the workspace's policy from the first
opener's configuration, the live workspace the callers on the same root, model and
configuration share, its first scan started; or the policy alone, `open_settings`, for a face
that shows no workspace segment), and the state's one subscription to each live
workspace. A changed segment becomes an event (`Events.segment`) the faces forward to their
clients, and the workspace's open sessions are re-measured once, each in its lane, however
many connections are on the workspace.
Must not: import a face or send anything itself. (Not a method of `State`: this module reaches
the request functions, which import the caller, which names the State: a circle.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctxlayer import protocol
from ctxlayer.state.caller import Caller

if TYPE_CHECKING:
    from ctxlayer.config import Config, ConfigRead
    from ctxlayer.state.live import LiveWorkspace
    from ctxlayer.state.state import State


def open_workspace(caller: Caller, config: Config | None,
                   overrides: dict[str, Any] | None = None, *,
                   config_read: ConfigRead | None = None) -> LiveWorkspace:
    """Open `caller`'s workspace (its `root`) with `config` (its loaded configuration) and
    the client's own `overrides`: `caller.live` is set and its first scan started.
    `config_read` is what the files held as `config` was read (load_config's `seen`): once
    the watcher runs, an edit made since is applied, and none is said when there was none."""
    state = caller.state
    assert caller.root is not None, "a caller without a root has no workspace to open"
    state.configure(caller.workspace, config)
    live = state.workspaces.acquire(caller.root, config, caller.model(), overrides,
                                    opened_as=caller.opened_as, config_read=config_read)
    if live.refs == 1:  # a new live workspace: the state follows it, once
        live.subscribers.append(Following(workspace_caller(state, live)))
    following(live).callers.append(caller)
    caller.live = live
    live.start()
    return live


def leave_workspace(caller: Caller) -> None:
    """`caller` (a connection that ended) leaves its live workspace: it is told nothing more
    of it, and the workspace stops when it was the last one on it."""
    live, caller.live = caller.live, None
    if live is None:
        return
    callers = following(live).callers
    if caller in callers:
        callers.remove(caller)
    caller.state.workspaces.release(live)


def open_settings(caller: Caller, config: Config | None) -> None:
    """Give `caller` its workspace's settings (its policy, from `config`) and no live
    workspace: for a face that shows no workspace segment (the gateway alone), which then
    neither scans nor watches the workspace."""
    assert caller.root is not None, "a caller without a root has no workspace to configure"
    caller.state.configure(caller.workspace, config)
    caller.live = None
    caller.live_decided.set()


def workspace_caller(state: State, live: LiveWorkspace) -> Caller:
    """The state's own caller on a live workspace: who re-measures its sessions."""
    own = Caller(state, source="session")
    own.root, own.config, own.live = live.root, live.config, live
    own.opened_as = live.opened_as
    own.live_decided.set()
    return own


class Following:
    """The state's one subscription to a live workspace: its own caller (`own`), who
    re-measures the workspace's open sessions once per change, and the callers on it, each
    told the budget its own window fits them to (the state's own caller names none: told to
    every editor as it measured them, a save pushed the kept 100,000 to an editor whose
    assemblies fitted 8,000 to its 16,000-token window)."""

    def __init__(self, own: Caller) -> None:
        self.own = own
        self.callers: list[Caller] = []

    def __call__(self, segment: protocol.WorkspaceSegment, changed: list[str]) -> None:
        segment_changed(self.own, segment, changed, self.callers)


def following(live: LiveWorkspace) -> Following:
    """The state's subscription to `live` (open_workspace made it with the workspace)."""
    return next(s for s in live.subscribers if isinstance(s, Following))


def segment_changed(own: Caller, segment: protocol.WorkspaceSegment, changed: list[str],
                    told: list[Caller]) -> None:
    """Subscriber of a live workspace (on the loop): the event for the faces, then its open
    sessions re-measured against the new segment, their budgets told to `told`."""
    from ctxlayer.state.requests.sessions import on_segment_changed

    state, live = own.state, own.live
    assert live is not None
    state.events.segment(live, protocol.SegmentChanged(
        hash=segment.hash, version=segment.version, tokens=segment.tokens,
        changed=changed,  # type: ignore[arg-type]
    ))
    if state.sessions_started:
        state.spawn(on_segment_changed(own, segment, told))
