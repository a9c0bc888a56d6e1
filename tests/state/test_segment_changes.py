"""A changed workspace segment is the state's to react to: it follows each live workspace
once, re-measures every open session once per change however many connections are on the
workspace, and emits one segment event that the faces forward. A real State, real callers
on a real folder (its first scan and refresh), the request functions called directly."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ctxlayer import protocol
from ctxlayer.config import load_config
from ctxlayer.state import Caller, State
from ctxlayer.state.opening import leave_workspace, open_workspace
from ctxlayer.state.requests import call, sessions

MODEL = "gpt-4o"


def connection(state: State, root: Path) -> Caller:
    caller = Caller(state, source="session", options=protocol.InitializationOptions(model=MODEL))
    caller.root = root
    config, _ = load_config(root, root / "no-user-config")
    caller.config = config
    open_workspace(caller, config)
    caller.live_decided.set()
    return caller


async def settled(state: State) -> None:
    while state._tasks:  # the state's re-measures, each in its session's lane
        await asyncio.gather(*list(state._tasks))


async def test_two_connections_re_measure_each_session_once_per_change(state, tmp_path,
                                                                       monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "AGENTS.md").write_text("Run the tests before a commit.\n")
    first, second = connection(state, root), connection(state, root)
    assert first.live is second.live and first.live.refs == 2
    await first.segment()
    for sid in ("a", "b"):
        await call(first, "ctx/session/open", protocol.SessionOpenParams(
            session_id=sid, model=MODEL, budget=50_000))
    measured: list[str] = []
    remeasure = sessions.remeasure

    def counted(caller: Caller, session_id: str, segment: protocol.WorkspaceSegment,
                told: list[Caller] | None = None) -> None:
        measured.append(session_id)
        remeasure(caller, session_id, segment, told)

    monkeypatch.setattr(sessions, "remeasure", counted)
    events: list[protocol.SegmentChanged] = []
    state.events.segment_listeners.append(lambda live, change: events.append(change))
    names = {id(first): "first", id(second): "second"}
    heard: list[tuple[str, str | None]] = []
    state.events.budget_listeners.append(
        lambda ws, b, who: heard.append((names.get(id(who), "?"), b.session_id)))

    (root / "AGENTS.md").write_text("Run the tests before a commit. Never push on Fridays.\n")
    changed = await first.live.refresh(None)
    await settled(state)
    assert "agentFiles" in changed
    assert sorted(measured) == ["a", "b"]  # once each, not once per connection
    [event] = events
    assert event.hash == first.live.segment.hash and "agentFiles" in event.changed
    # each connection on the workspace hears each re-measured budget, as its own window
    # fits it (tests/lsp/test_session_budget_remeasured.py)
    assert sorted(heard) == [("first", "a"), ("first", "b"), ("second", "a"), ("second", "b")]

    # the second connection goes: the state still follows the workspace the first keeps,
    # and tells the first only
    live = first.live
    leave_workspace(second)
    measured.clear()
    heard.clear()
    (root / "AGENTS.md").write_text("Run the tests. Never push on Fridays.\n")
    await live.refresh(None)
    await settled(state)
    assert sorted(measured) == ["a", "b"]
    assert sorted(heard) == [("first", "a"), ("first", "b")]


async def test_a_closed_session_forgets_what_the_process_remembered_of_it(caller, state):
    spec = protocol.SystemPromptParams(identity="You review code.")
    await call(caller, "ctx/session/open", protocol.SessionOpenParams(
        session_id="s", model=MODEL, budget=50_000))
    await call(caller, "ctx/session/append", protocol.SessionAppendParams(
        session_id="s", messages=[{"role": "user", "content": "Look at parse()."}]))
    await call(caller, "ctx/assemble", protocol.AssembleParams(session_id="s",
                                                               system_prompt=spec))
    svc = state.sessions
    assert svc.system_spec("", "s") == spec and svc.layered("", "s")
    await call(caller, "ctx/session/close", protocol.SessionRef(session_id="s"))
    await call(caller, "ctx/session/open", protocol.SessionOpenParams(session_id="s",
                                                                      model=MODEL))
    # the reopened session starts from its rows, which keep the params (a restart reads them)
    assert svc.system_spec("", "s") == spec
    assert svc.layered("", "s")  # measured again at open
