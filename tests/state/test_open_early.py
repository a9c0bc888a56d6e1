"""The session service opened ahead of the first request (a starting gateway asks for it): on
a session thread, with the workspaces' settings, and a state closed meanwhile leaves nothing
open."""

from __future__ import annotations

import asyncio
import threading

import pytest

from ctxlayer import protocol
from ctxlayer.config import Config, SessionConfig
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import call
from ctxlayer.store import db


@pytest.fixture
def opened_on(monkeypatch) -> list[threading.Thread]:
    """The threads the sessions database is opened on, as it is opened."""
    threads: list[threading.Thread] = []
    real = db.SessionStore.__init__

    def noted(self, *args, **kwargs):
        threads.append(threading.current_thread())
        real(self, *args, **kwargs)

    monkeypatch.setattr(db.SessionStore, "__init__", noted)
    return threads


async def opened(state: State) -> None:
    for _ in range(3000):
        if state.sessions_started:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the session service was not opened")


async def test_opened_on_a_session_thread_with_the_workspaces_settings(tmp_path, opened_on):
    state = State(tmp_path / "state")
    try:
        state.configure("/ws", Config(session=SessionConfig(durability="full",
                                                            calibration_window=7)))
        state.open_sessions_soon()
        await opened(state)
        assert opened_on and opened_on[0] is not threading.current_thread()
        assert state.sessions.store.durability == "full"
        assert state.sessions.settings_of("/ws").calibration_window == 7
        # configured once it is open: applied to it too
        state.configure("/other", Config(session=SessionConfig(calibration_window=3)))
        assert state.sessions.settings_of("/other").calibration_window == 3
    finally:
        await state.work(state.close)


async def test_a_state_closed_before_the_opening_ran_opens_nothing(tmp_path):
    state = State(tmp_path / "state")
    state.close()
    state.open_sessions_soon()  # a session thread no longer runs it, or runs it closed
    await asyncio.sleep(0.2)
    assert not state.sessions_started


async def test_a_conversations_first_request_opens_the_database_off_the_event_loop(
        tmp_path, opened_on):
    """Opening checks the whole database file (seconds for a big one read from disk): the
    first ctx/prepare after a start, when nothing opened it ahead, does it on a session
    thread, so the event loop answers other requests meanwhile."""
    state = State(tmp_path / "state")
    caller = Caller(state, source="prepare",
                    options=protocol.InitializationOptions(model="gpt-4o"))
    try:
        result = await call(caller, "ctx/prepare", protocol.PrepareParams(
            format="openai", budget=3000,
            request={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
        assert result.request["messages"] == [{"role": "user", "content": "hi"}]
        assert opened_on and opened_on[0] is not threading.current_thread()
    finally:
        await state.work(state.close)
