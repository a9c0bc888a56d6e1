"""The sessions database damaged while the daemon runs (a disk error, another program writing
it): every session request says so (-32005) and to restart the daemon, which moves the file
aside. Before, the daemon's clean close noted the damaged file as closed cleanly, the next start
left its check out, and every start after failed the same way, no file ever moved aside. The
real daemons over stdio."""

from __future__ import annotations

import json
import os

from conftest import RawDaemon, ask, hermetic_env, make_repo, result

from ctxlayer import protocol

PAGE = 4096


def damage(db) -> None:
    """Random bytes over the pages past the schema's (the size kept, the header read)."""
    size = db.stat().st_size
    assert size > PAGE * 8, size
    with open(db, "r+b") as f:
        f.seek(PAGE * 3)
        f.write(os.urandom(size - PAGE * 4))


async def test_a_database_damaged_while_running_is_moved_aside_at_the_next_start(tmp_path):
    env = hermetic_env(tmp_path / "world")
    state = tmp_path / "world" / "state"
    db = state / "sessions.sqlite3"
    repo = make_repo(tmp_path / "repo")
    first = await RawDaemon.start(env=env)
    try:
        await first.initialize(repo)
        await result(first, "ctx/session/open", {"sessionId": "s1"})
        await result(first, "ctx/session/append", {"sessionId": "s1", "messages": [
            {"role": "user" if k % 2 == 0 else "assistant",
             "content": f"message {k} " + "lorem ipsum " * 300} for k in range(60)]})
    finally:
        assert await first.close() == 0
    second = await RawDaemon.start(env=env)
    try:
        await second.initialize(repo)
        await result(second, "ctx/session/open", {"sessionId": "s0"})  # the store is open
        damage(db)
        answer = await ask(second, "ctx/session/open", {"sessionId": "s1"})
        assert answer.get("error", {}).get("code") == protocol.ERROR_STORE, answer
        assert "restart the daemon to move it aside" in answer["error"]["message"], answer
    finally:
        assert await second.close() == 0
    assert not (state / "sessions.sqlite3.closed").exists(), "damaged: never closed cleanly"
    third = await RawDaemon.start(env=env)
    try:
        await third.initialize(repo)
        for name in ("s1", "s2"):  # a fresh database: s1 is new there
            await result(third, "ctx/session/open", {"sessionId": name})
        got = await result(third, "ctx/assemble", {"sessionId": "s1"})
        assert "lorem" not in json.dumps(got["messages"]), "the damaged file is not read"
    finally:
        assert await third.close() == 0
    assert (state / "sessions.sqlite3.corrupt-1").exists()
    assert not (state / "sessions.sqlite3.damaged").exists(), "the fresh one passed its check"
