"""`shutdown` and `exit` sent at once while an assembly waits for the client's summary: the
process ends at once, the assembly answered first (with the offline summary), then
`shutdown`. The client that said `exit` answers nothing more.

Before: `shutdown` waited for the summary the client would never send, so the process ended
only when the summarizer timeout ran out, at most `SHUTDOWN_WAIT_S` (measured: 5.0 s with the
default timeout of 5 s, 30.1 s with one of 60 s). The real daemon over stdio; the bound below
is a liveness check, far under the 60 s the assembly would wait."""

from __future__ import annotations

import asyncio

import pytest
from conftest import RawDaemon, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e


def turns(n: int) -> list[dict]:
    return [{"role": "user" if k % 2 == 0 else "assistant",
             "content": f"turn {k}: " + " ".join(f"w{k}x{j}" for j in range(300))}
            for k in range(n)]


async def asked_to_summarize(daemon: RawDaemon) -> None:
    while not any(n.get("method") == "ctx/summarize" for n in daemon.notifications):
        daemon._arrived.clear()
        await daemon._arrived.wait()


async def test_exit_ends_the_process_while_a_summary_is_asked(tmp_path):
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        await daemon.request(0, "initialize", {
            "processId": None, "rootUri": make_repo(tmp_path / "repo").as_uri(),
            "capabilities": {"experimental": {"ctxlayer": {"summarize": True}}},
            "initializationOptions": {"config": {"session": {"summarizerTimeout": 60}}}})
        await daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 4000})
        await result(daemon, "ctx/session/append", {"sessionId": "s", "messages": turns(30)})
        await daemon.send({"jsonrpc": "2.0", "id": "a", "method": "ctx/assemble",
                           "params": {"sessionId": "s"}})
        await asyncio.wait_for(asked_to_summarize(daemon), 30)
        await daemon.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
        await daemon.send({"jsonrpc": "2.0", "method": "exit"})
        assert await asyncio.wait_for(daemon.proc.wait(), 10) == 0
        await asyncio.sleep(0)  # the reader takes what the pipe still held
        assembled = await daemon.response("a", timeout=5)
        assert assembled["result"]["compacted"] is True, assembled
        assert (await daemon.response("bye", timeout=5))["result"] is None
    finally:
        if daemon.proc.returncode is None:
            daemon.proc.kill()
            await daemon.proc.wait()
