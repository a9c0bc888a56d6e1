"""A cancelled request either changed nothing and answers "canceled" (-32800), or answers
what it did: a session's work on a thread cannot be stopped half-way, and an append answered
"canceled" that the session had stored was stored twice by the client's retry (the Python
client cancels a request it timed out). The real daemon over stdio; each append is cancelled
in the same write that sends it, while its work runs or while it waits for the one before."""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo

pytestmark = pytest.mark.e2e
CANCELLED = -32800


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def batch(b: int) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "id": f"b{b}m{i}",
             "content": f"batch {b} message {i} " + "words of a long turn " * 400}
            for i in range(40)]


def appends_then(*after: dict) -> bytes:
    """Four appends to session s (a0..a3, 40 messages each), then ``after``, in one write."""
    return b"".join(
        frame({"jsonrpc": "2.0", "id": f"a{b}", "method": "ctx/session/append",
               "params": {"sessionId": "s", "messages": batch(b)}}) for b in range(4)
    ) + b"".join(frame(m) for m in after)


async def test_a_cancelled_append_answers_what_it_did(tmp_path):
    env = hermetic_env(tmp_path / "world")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(make_repo(WORLD / "cancel-repo"))
        opened = await daemon.request("open", "ctx/session/open",
                                      {"sessionId": "c"})
        assert "result" in opened, opened
        batches = range(6)
        # all at once: the later appends wait for their lane when their cancel arrives
        await daemon.send_raw(b"".join(
            frame({"jsonrpc": "2.0", "id": f"a{b}", "method": "ctx/session/append",
                   "params": {"sessionId": "c", "messages": batch(b)}})
            + frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": f"a{b}"}})
            for b in batches))
        answers = {b: await daemon.response(f"a{b}", timeout=120) for b in batches}
        assembled = await daemon.request("asm", "ctx/assemble",
                                        {"sessionId": "c", "budget": 5_000_000})
        ids = [m["id"] for m in assembled["result"]["messages"]]
        for b, answer in answers.items():
            stored = sum(1 for i in ids if i.startswith(f"b{b}m"))
            if "result" in answer:
                assert stored == 40, (b, answer["result"], stored)
            else:
                assert answer["error"]["code"] == CANCELLED, answer
                assert stored == 0, f"append {b} answered 'canceled' but stored {stored} of 40"
        # what was stored is in arrival order, each batch whole
        expected = [f"b{b}m{i}" for b in batches if "result" in answers[b] for i in range(40)]
        assert [i for i in ids if i.startswith("b")] == expected
    finally:
        assert await daemon.close() == 0


async def test_shutdown_answers_the_requests_that_arrived_before_it(tmp_path):
    """LSP lets a client pipeline requests before `shutdown` and wait for its answer: they
    are answered and applied first (pygls cancelled them: appends answered 'canceled', lost)."""
    env = hermetic_env(tmp_path / "world")
    root = make_repo(WORLD / "shutdown-repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await daemon.request("open", "ctx/session/open", {"sessionId": "s"})
        await daemon.send_raw(appends_then({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"}))
        assert (await daemon.response("bye", timeout=120)).get("result", "?") is None
        for b in range(4):
            answer = await daemon.response(f"a{b}", timeout=5)
            assert "result" in answer, (b, answer)
        await daemon.send({"jsonrpc": "2.0", "method": "exit"})
        assert await asyncio.wait_for(daemon.proc.wait(), 10) == 0
    finally:
        assert await daemon.close() == 0
    again = await RawDaemon.start(env=env)
    try:
        await again.initialize(root)
        await again.request("open", "ctx/session/open", {"sessionId": "s"})
        assembled = await again.request("asm", "ctx/assemble",
                                        {"sessionId": "s", "budget": 5_000_000})
        ids = [m["id"] for m in assembled["result"]["messages"] if m["id"].startswith("b")]
        assert ids == [f"b{b}m{i}" for b in range(4) for i in range(40)]
    finally:
        assert await again.close() == 0


async def test_exit_right_after_shutdown_waits_for_its_answer_and_exits_0(tmp_path):
    """LSP: exit code 0 once `shutdown` was received. A client that sends `shutdown` and
    `exit` together, without waiting for the answer, got exit code 1 while the requests
    before them ran, shutdown never answered, and a CancelledError traceback in the log."""
    env = hermetic_env(tmp_path / "world")
    root = make_repo(WORLD / "shutdown-exit-repo")
    log = tmp_path / "stderr.txt"
    with log.open("wb") as stderr:
        daemon = await RawDaemon.start(env=env, stderr=stderr)
        try:
            await daemon.initialize(root)
            await daemon.request("open", "ctx/session/open", {"sessionId": "s"})
            await daemon.send_raw(appends_then(
                {"jsonrpc": "2.0", "id": "bye", "method": "shutdown"},
                {"jsonrpc": "2.0", "method": "exit"}))
            assert await asyncio.wait_for(daemon.proc.wait(), 120) == 0
            await daemon._pump  # every answer written before the exit has been read
        finally:
            if daemon.proc.returncode is None:
                daemon.proc.kill()
                await daemon.proc.wait()
    assert daemon.responses.get("bye", {}).get("result", "?") is None, daemon.responses
    for b in range(4):
        assert "result" in daemon.responses[f"a{b}"], (b, daemon.responses[f"a{b}"])
    assert "Traceback" not in log.read_text(), log.read_text()[-2000:]
