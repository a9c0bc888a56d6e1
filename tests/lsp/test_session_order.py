"""Requests on one session apply in the order they arrived, whatever runs on worker threads:
1,000 appends pipelined without waiting (as an editor that does not wait for each answer
sends them) are stored in that order, and a restarted daemon reads them back in that order."""

from __future__ import annotations

import json

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo

pytestmark = pytest.mark.e2e
APPENDS = 1000


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def test_pipelined_appends_keep_their_order_across_a_restart(tmp_path):
    env = hermetic_env(tmp_path / "world")
    root = make_repo(WORLD / "order-repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        opened = await daemon.request("open", "ctx/session/open",
                                      {"sessionId": "order"})
        assert "result" in opened, opened
        # one write: the daemon sees them back to back; a user turn, then a reply, alternating
        pipe = b"".join(frame({
            "jsonrpc": "2.0", "id": f"a{i}", "method": "ctx/session/append",
            "params": {"sessionId": "order", "messages": [{
                "role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}",
                "id": f"m{i}"}]},
        }) for i in range(APPENDS))
        await daemon.send_raw(pipe)
        for i in range(APPENDS):
            answer = await daemon.response(f"a{i}", timeout=120)
            assert "result" in answer, answer
    finally:
        assert await daemon.close() == 0

    again = await RawDaemon.start(env=env)
    try:
        await again.initialize(root)
        await again.request("open", "ctx/session/open", {"sessionId": "order"})
        assembled = await again.request("asm", "ctx/assemble",
                                        {"sessionId": "order", "budget": 1_000_000})
        ids = [m["id"] for m in assembled["result"]["messages"] if m["id"].startswith("m")]
        assert ids == [f"m{i}" for i in range(APPENDS)]
    finally:
        assert await again.close() == 0


async def test_the_workspace_layer_is_counted_after_a_restart(tmp_path):
    """The budget an editor shows right after the daemon restarts still counts the workspace."""
    env = hermetic_env(tmp_path / "world")
    root = make_repo(WORLD / "layer-repo")
    before = None
    for round_ in range(2):
        daemon = await RawDaemon.start(env=env)
        try:
            await daemon.initialize(root)
            if round_ == 0:
                await daemon.request("o", "ctx/session/open", {"sessionId": "kept"})
                await daemon.request("a", "ctx/session/append", {"sessionId": "kept", "messages": [
                    {"role": "user", "content": "hello there"}]})
            budget = (await daemon.request("b", "ctx/session/budget", {"sessionId": "kept"}))
            layers = budget["result"]["byLayer"]
            if before is None:
                before = layers
                assert layers["workspace"] > 0
            else:  # no ctx/session/open this time: the daemon measured it by itself
                assert layers == before
        finally:
            assert await daemon.close() == 0


async def test_a_request_after_a_save_reads_what_was_saved(tmp_path):
    """An editor saves AGENTS.md, says so, and sends its chat turn: the turn carried the
    instructions from before the save, 20 times in 20 (the save's refresh ran beside it)."""
    env = hermetic_env(tmp_path / "world")
    root = make_repo(WORLD / "save-repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await daemon.request("open", "ctx/session/open", {"sessionId": "s"})
        await daemon.request("hi", "ctx/session/append", {"sessionId": "s", "messages": [
            {"role": "user", "content": "hi"}]})
        for i in range(5):
            (root / "AGENTS.md").write_text(f"Rule version {i}.\n")
            await daemon.send_raw(frame({
                "jsonrpc": "2.0", "method": "textDocument/didSave",
                "params": {"textDocument": {"uri": (root / "AGENTS.md").as_uri()}},
            }) + frame({"jsonrpc": "2.0", "id": f"asm{i}", "method": "ctx/assemble",
                        "params": {"sessionId": "s"}}))
            answer = await daemon.response(f"asm{i}")
            system = " ".join(m["content"] for m in answer["result"]["messages"]
                              if m["role"] == "system")
            assert f"Rule version {i}." in system, system[-300:]
    finally:
        assert await daemon.close() == 0
