"""`ctxlayer chats` while another process holds the state database locked: a chat kept only on
disk (after a restart) cannot be read, and that is said. Before, after the lock's timeout,
`chats` printed "no live conversations yet" and exit 0, `--json` {"conversations": []}, and
`chats --why kept` "no live conversation 'kept'". Now the gateway answers its store error
(`chats`: one line naming the lock, exit 2), and with a live chat in memory lists that one
and says the kept ones could not be read (exit 1). Real gateway before the strict stand-in,
the real `chats` command, a real second connection holding `BEGIN EXCLUSIVE`."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_stack import Stack, prose, small_stack

from ctxlayer.store import db


def chats(stack: Stack, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxlayer", "chats", "--url", stack.anthropic_url,
                           "--state-dir", str(stack.state.state_dir), *flags],
                          capture_output=True, text=True, timeout=60)


def turns(stack: Stack, cid: str, n: int) -> None:
    history: list[dict] = []
    for i in range(n):
        history.append({"role": "user", "content": prose(f"{cid}{i}", 120)})
        answer = stack.anthropic().messages.create(
            model="standin-small", max_tokens=256, messages=history,
            extra_headers={"x-ctxlayer-conversation": cid})
        history.append({"role": "assistant", "content": answer.content[0].text})


@contextlib.contextmanager
def locked(base: Path) -> Iterator[None]:
    """The state database held by another process's exclusive transaction. The gateway keeps a
    turn on its own thread after answering, so the lock is taken once that write is done."""
    other = sqlite3.connect(base / "state" / "sessions.sqlite3", isolation_level=None,
                            timeout=30)
    other.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_a_kept_chat_the_locked_database_hides_is_an_error_not_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with small_stack(tmp_path) as stack:
        turns(stack, "kept", 3)
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 200)  # the lock's wait, 5 s, made short
    with small_stack(tmp_path) as stack:
        listed = chats(stack, "--json")
        assert listed.returncode == 0, listed.stderr
        assert [c["conversationId"] for c in json.loads(listed.stdout)["conversations"]] \
            == ["kept"]
        with locked(tmp_path):
            for flags in ((), ("--json",), ("--why", "kept")):
                done = chats(stack, *flags)
                assert done.returncode == 2, (flags, done.stdout, done.stderr)
                assert "no live conversation" not in done.stdout + done.stderr, flags
                assert done.stdout == "" and "503" in done.stderr, (flags, done.stderr)
                assert "sessions database: the database is locked" in done.stderr, flags
        # a chat in memory is listed all the same, and the kept one said unread
        turns(stack, "live", 1)
        with locked(tmp_path):
            shown = chats(stack)
            answered = chats(stack, "--json")
            why = chats(stack, "--why", "live")
    assert shown.returncode == 1, (shown.stdout, shown.stderr)
    assert [line.split()[0] for line in shown.stdout.splitlines()[1:]] == ["live"]
    assert "only the live conversations are listed: the state folder could not read the " \
           "kept conversations: the database is locked" in shown.stderr, shown.stderr
    assert answered.returncode == 1, answered.stderr
    data = json.loads(answered.stdout)
    assert [c["conversationId"] for c in data["conversations"]] == ["live"]
    assert "the database is locked" in data["warning"], data
    assert why.returncode == 0, why.stderr  # a live chat's why is in memory: no database
