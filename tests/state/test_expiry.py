"""The state folder forgets what its workspace's `[session] keep_days` let go (state/expiry.py):
once the session database opens, in the background, then at most once a day."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ctxlayer.config import Config, SessionConfig
from ctxlayer.protocol import AuditEntry
from ctxlayer.state import State
from ctxlayer.state.expiry import EVERY, Expiry, cutoff
from ctxlayer.store import SessionStore

WS = "/ws/kept"


def test_a_workspace_is_due_once_a_day_and_again_when_configured() -> None:
    now = [1000.0]
    expiry = Expiry(clock=lambda: now[0])
    assert expiry.due(WS) and not expiry.due(WS)
    assert expiry.due("/ws/other")
    now[0] += EVERY - 1
    assert not expiry.due(WS)
    now[0] += 1
    assert expiry.due(WS)
    expiry.reset(WS)
    assert expiry.due(WS)


def test_the_cutoff_is_written_as_the_rows_write_their_times() -> None:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    assert cutoff(30, now) == "2026-01-30T00:00:00.000+00:00"
    assert cutoff(30, now) < now.isoformat(timespec="milliseconds")


def _fill(state_dir) -> None:
    """A session with audit entries and a conversation window from 40 days ago, and newer."""
    store = SessionStore(state_dir)
    old, new = cutoff(40), cutoff(0)
    row, _ = store.create_or_get(WS, "chat", model="gpt-4o", mode="deep", budget=None, now=old)
    entry = AuditEntry(action="dropped", reason="older history", summary="a message",
                       tokens_before=10, tokens_after=0, message_id="m0", index=0)
    store.add_audit(row.sid, [entry] * 4, old)
    store.add_audit(row.sid, [entry], new)
    store.put_conversation(WS, "old-chat", "gpt-4o", 1, b"{}", old)
    store.put_conversation(WS, "new-chat", "gpt-4o", 1, b"{}", new)
    store.close()


@pytest.mark.parametrize("keep_days, audit_left, old_window_kept", [(30, 1, False),
                                                                    (0, 5, True)])
async def test_opening_the_sessions_forgets_what_is_older_than_keep_days(
        tmp_path, keep_days, audit_left, old_window_kept) -> None:
    state_dir = tmp_path / "state"
    _fill(state_dir)
    state = State(state_dir)
    try:
        state.configure(WS, Config(session=SessionConfig(keep_days=keep_days)))
        store = state.sessions.store  # opens the database: the removal is queued
        await state.keep(lambda: None)  # after what was queued before it
        sid = store.get(WS, "chat").sid
        assert len(store.audit(sid)) == audit_left
        assert (store.conversation(WS, "old-chat") is not None) is old_window_kept
        assert store.conversation(WS, "new-chat") is not None
        assert store.get(WS, "chat") is not None  # the session itself stays
    finally:
        state.close()
