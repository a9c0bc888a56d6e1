"""A file saved under the workspace re-measures its open sessions, and each editor is pushed
the session's budget as its own connection sees it: the limit its ctx/session/budget answers
and its next ctx/assemble fits to, within the context window it named at initialize.

Before: the re-measure ran once for the workspace, as a caller that names no window, and
pushed that budget to every editor: under a 16,000-token window (ctx/session/budget and the
assembly at 8,000), the save pushed the session's kept 100,000. The real daemon, over stdio
and over TCP, a real save in a temporary git repository; the pushes read from the stream."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import pytest
from conftest import SERVE, WORLD, RawDaemon, hermetic_env, make_repo, result, started
from gitrepo import write

from ctxlayer_client import AsyncClient

pytestmark = pytest.mark.e2e
_worlds = itertools.count()

#: long enough to change the workspace layer's count by many tokens
SAVED = "Run `make check` before committing, and keep every change small.\n" * 8


async def pushed_after(daemon: RawDaemon, seen: int, workspace: int) -> dict:
    """The first ctx/budgetChanged of session "s" after the first `seen` notifications whose
    workspace layer is no longer `workspace` tokens (the save's re-measure), waited for."""
    async def wait() -> dict:
        while True:
            for n in daemon.notifications[seen:]:
                params = n.get("params") or {}
                if (n.get("method") == "ctx/budgetChanged" and params.get("sessionId") == "s"
                        and params["byLayer"]["workspace"] != workspace):
                    return params
            await asyncio.sleep(0.05)

    return await asyncio.wait_for(wait(), 30)


async def test_a_saved_file_pushes_the_limit_the_session_budget_answers():
    base = WORLD / f"remeasured-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await started(env, root)
    try:  # kept at 100,000 under gpt-4o's own window
        await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 100_000})
    finally:
        assert await daemon.close() == 0

    daemon = await started(env, root, contextWindow=16_000)
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "s"})
        before = await result(daemon, "ctx/session/budget", {"sessionId": "s"})
        assert before["limit"] < 16_000, before
        seen = len(daemon.notifications)
        saved = write(root, "AGENTS.md", SAVED)
        await daemon.send({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {
            "textDocument": {"uri": saved.as_uri()}}})
        pushed = await pushed_after(daemon, seen, before["byLayer"]["workspace"])
        now = await result(daemon, "ctx/session/budget", {"sessionId": "s"})
        assert (pushed["limit"], pushed["used"]) == (now["limit"], now["used"]), (pushed, now)
        assert pushed["limit"] == before["limit"], pushed
        assembled = await result(daemon, "ctx/assemble", {"sessionId": "s"})
        assert assembled["budget"] == pushed["limit"], assembled["budget"]
    finally:
        assert await daemon.close() == 0


async def test_each_editor_is_pushed_what_its_own_window_fits(tmp_path: Path):
    """Two editors on one TCP daemon and one session: the one that names a 16,000-token
    window is pushed 8,000 on a save, the one that names none the session's own 100,000."""
    env = hermetic_env(tmp_path)
    root = make_repo(tmp_path / "repo")
    proc = await asyncio.create_subprocess_exec(
        *SERVE, "--tcp", "--port", "0", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    info = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
    token = Path(info["tokenFile"]).read_text().strip()
    clients: list[AsyncClient] = []
    try:
        for options in ({"model": "gpt-4o"}, {"model": "gpt-4o", "contextWindow": 16_000}):
            clients.append(await AsyncClient.connect("127.0.0.1", info["port"], token, root,
                                                     options=options, timeout=30))
        wide, narrow = clients
        await wide.request("ctx/session/open", {"sessionId": "s", "budget": 100_000})
        await narrow.request("ctx/session/open", {"sessionId": "s"})
        answers = [await c.request("ctx/session/budget", {"sessionId": "s"}) for c in clients]
        assert [a["limit"] for a in answers][0] == 100_000 > 16_000 > answers[1]["limit"]
        workspace = answers[0]["byLayer"]["workspace"]
        waits = [asyncio.ensure_future(c.wait_for(
            "ctx/budgetChanged", lambda b: b.session_id == "s"
            and b.by_layer.workspace != workspace)) for c in clients]
        write(root, "AGENTS.md", SAVED)
        pushes = await asyncio.gather(*waits)
        assert [p.limit for p in pushes] == [a["limit"] for a in answers], pushes
    finally:
        for c in clients:
            await c.close()
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 10)
