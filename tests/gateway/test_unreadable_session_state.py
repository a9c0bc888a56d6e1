"""A gateway chat whose session keeps a calibration or a compaction that does not read (a byte
changed on disk, another version's form): after a restart, every turn of that chat answered
500 "preparing the request failed (a bug ...)". Now the chat goes on as if it had none, and the
log says so once. Real gateway, the strict stand-in, the state folder kept across the restart."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest
from gateway_stack import Stack, prose, small_stack

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


def turn(stack: Stack, messages: list[dict], k: int) -> int:
    messages.append({"role": "user", "content": prose(f"u{k}", 180)})
    raw = stack.openai().chat.completions.with_raw_response.create(
        model="standin-small", max_tokens=128, messages=[SYSTEM, *messages])
    raw.parse()
    messages.append({"role": "assistant", "content": prose(f"a{k}", 120)})
    return raw.http_response.status_code


@pytest.mark.parametrize("column", ["calibration", "compaction"])
def test_a_chat_whose_kept_state_does_not_read_goes_on(
        tmp_path: Path, column: str, caplog: pytest.LogCaptureFixture) -> None:
    messages: list[dict] = []
    with small_stack(tmp_path) as stack:
        assert [turn(stack, messages, k) for k in range(6)] == [200] * 6
    db = sqlite3.connect(tmp_path / "state" / "sessions.sqlite3")
    assert db.execute(f"UPDATE sessions SET {column}=?", (b"\x00{garbage",)).rowcount == 1
    db.commit()
    db.close()
    caplog.set_level(logging.WARNING, logger="ctxlayer.state.session_service")
    with small_stack(tmp_path) as stack:
        assert [turn(stack, messages, k) for k in range(6, 9)] == [200] * 3
        sent = stack.model_requests()[-1]["body"]["messages"]
        assert "u8" in str(sent[-1])
    said = [r.getMessage() for r in caplog.records if "does not read" in r.getMessage()]
    assert len(said) == 1 and column in said[0], said
