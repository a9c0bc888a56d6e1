"""The state folder deleted (or moved) while daemons run: SQLite goes on writing the file the
daemon opened, which is no longer at its path. Before, every later append and a new session's
open were answered as stored, and gone at the next start (`messages 0`); a second daemon started
a new file meanwhile and the two split apart, no warning ever. Now no write into the file that
went away is answered as stored: each is -32005 saying what happened and what to do, and the
editor is told once. The real daemons over stdio."""

from __future__ import annotations

import shutil

from conftest import RawDaemon, hermetic_env, make_repo

from ctxlayer import protocol


def said_gone(answer: dict) -> None:
    assert answer.get("error", {}).get("code") == protocol.ERROR_STORE, answer
    assert "deleted or moved while ctxlayer ran" in answer["error"]["message"], answer


async def test_no_write_into_a_deleted_state_folder_is_answered_as_stored(tmp_path):
    env = hermetic_env(tmp_path / "world")
    state = tmp_path / "world" / "state"
    repo = make_repo(tmp_path / "repo")
    a = await RawDaemon.start(env=env)
    b = None
    try:
        await a.initialize(repo)
        assert "result" in await a.request(1, "ctx/session/open", {"sessionId": "s"})
        assert "result" in await a.request(2, "ctx/session/append", {"sessionId": "s",
                "messages": [{"role": "user", "content": "before", "id": "m0"}]})
        shutil.rmtree(state)  # the user resets ctxlayer's state while an editor runs
        said_gone(await a.request(3, "ctx/session/append", {"sessionId": "s",
                  "messages": [{"role": "assistant", "content": "A wrote this", "id": "mA"}]}))
        said_gone(await a.request(4, "ctx/session/open", {"sessionId": "new"}))
        shown = await a.shown("deleted or moved")
        assert str(state) in shown and "restart" in shown
        told = [n for n in a.notifications if n["method"] == "window/showMessage"
                and "deleted or moved" in n["params"]["message"]]
        assert len(told) == 1, told  # once, not at every request
        # a second editor window starts on a new folder there, and A still refuses
        b = await RawDaemon.start(env=env)
        await b.initialize(repo)
        assert "result" in await b.request(1, "ctx/session/open", {"sessionId": "s"})
        assert "result" in await b.request(2, "ctx/session/append", {"sessionId": "s",
                "messages": [{"role": "user", "content": "B wrote this", "id": "mB"}]})
        said_gone(await a.request(5, "ctx/session/append", {"sessionId": "s",
                  "messages": [{"role": "assistant", "content": "A again", "id": "mA2"}]}))
    finally:
        assert await a.close() == 0
        if b is not None:
            assert await b.close() == 0
    # what a new daemon finds is what was answered as stored since the folder was made anew
    c = await RawDaemon.start(env=env)
    try:
        await c.initialize(repo)
        await c.request(1, "ctx/session/open", {"sessionId": "s"})
        got = await c.request(2, "ctx/assemble", {"sessionId": "s"})
        ids = [m.get("id") for m in got["result"]["messages"]]
        assert "mB" in ids and "mA" not in ids and "mA2" not in ids, ids
    finally:
        assert await c.close() == 0
