"""`[session] calibration_window` applies to every session, not only to new ones: a session
kept in the store kept the window it was made with for good (three reports at 2.0 kept, the
daemon restarted with a window of 1, a report at 1.0: bias 2.0 where 1.0 was due, while a new
session answered 1.0), and a live session ignored an edited setting. Its stored reports are
kept; the window is the setting's. The real daemon over stdio, restarted on one state
folder."""

from __future__ import annotations

import pytest
from conftest import RawDaemon, hermetic_env, make_repo, result, write

pytestmark = pytest.mark.e2e


async def _report(daemon: RawDaemon, session: str, ratio: float) -> float:
    out = await result(daemon, "ctx/session/reportUsage", {
        "sessionId": session, "promptTokens": int(1000 * ratio), "estimatedTokens": 1000})
    return out["bias"]


async def test_a_kept_session_takes_the_window_of_the_setting(tmp_path):
    env, root = hermetic_env(tmp_path / "world"), make_repo(tmp_path / "repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/session/open", {"sessionId": "s"})
        for _ in range(3):
            bias = await _report(daemon, "s", 2.0)
        assert bias == 2.0
    finally:
        assert await daemon.close() == 0

    write(root, "ctxlayer.toml", "[session]\ncalibration_window = 1\n")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/session/open", {"sessionId": "s"})
        assert await _report(daemon, "s", 1.0) == 1.0  # the newest one report alone
    finally:
        assert await daemon.close() == 0


async def test_a_live_session_follows_an_edited_window(tmp_path):
    root = make_repo(tmp_path / "repo")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/segment", {})  # the watcher runs
        await result(daemon, "ctx/session/open", {"sessionId": "s"})
        for _ in range(3):
            await _report(daemon, "s", 2.0)
        write(root, "ctxlayer.toml", "[session]\ncalibration_window = 2\n")
        assert "session.calibration_window 50 -> 2" in await daemon.shown("reloaded")
        # the newest two: 2.0 and 1.0, whose median is 1.5 (the window of 50: 2.0)
        assert await _report(daemon, "s", 1.0) == 1.5
    finally:
        assert await daemon.close() == 0
