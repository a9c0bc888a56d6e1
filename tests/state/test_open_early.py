"""The session service opened ahead of the first request (a starting gateway asks for it): on
a session thread, with the workspaces' settings, and a state closed meanwhile leaves nothing
open."""

from __future__ import annotations

import asyncio

from ctxlayer.config import Config, SessionConfig
from ctxlayer.state import State


async def opened(state: State) -> None:
    for _ in range(3000):
        if state.sessions_started:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the session service was not opened")


async def test_opened_on_a_session_thread_with_the_workspaces_settings(tmp_path):
    state = State(tmp_path / "state")
    try:
        state.configure("/ws", Config(session=SessionConfig(durability="full")))
        state.open_sessions_soon()
        await opened(state)
        assert state.sessions.store.durability == "full"
        # configured while it is open: applied to it too
        state.configure("/other", Config(session=SessionConfig(durability="full")), replace=True)
        assert state.sessions.store.durability == "full"
    finally:
        await state.work(state.close)


async def test_a_state_closed_before_the_opening_ran_opens_nothing(tmp_path):
    state = State(tmp_path / "state")
    state.close()
    state.open_sessions_soon()  # a session thread no longer runs it, or runs it closed
    await asyncio.sleep(0.2)
    assert not state.sessions_started
