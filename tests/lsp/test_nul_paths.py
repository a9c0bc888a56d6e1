"""A path a client gives holding a NUL byte: no file can have it, and the OS refuses it with a
ValueError that no check of a path expected. An attached file's answered -32603 with a
traceback; an `agent_files` entry failed every scan of the workspace, so the daemon answered
none of its requests; a removed folder's hid that the followed folder left."""

from __future__ import annotations

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo

pytestmark = pytest.mark.e2e


async def test_a_nul_byte_in_a_path_is_refused_by_name_and_the_daemon_goes_on(tmp_path):
    root = make_repo(WORLD / f"nul-{tmp_path.name}")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        await daemon.request(0, "initialize", {
            "processId": None, "capabilities": {}, "rootUri": root.as_uri(),
            "initializationOptions": {"config": {"workspace": {
                "agent_files": ["AGENTS\u0000.md", "AGENTS.md"]}}}})
        await daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

        bad = [{"role": "user", "content": "look", "files": ["README.md", "in.txt\u0000x"]}]
        trimmed = await daemon.request(1, "ctx/trim", {"messages": bad, "budget": 1000})
        error = trimmed["error"]
        assert error["code"] == -32602, error
        assert "messages[0].files[1]" in error["message"] and "NUL" in error["message"]

        segment = (await daemon.request(2, "ctx/segment", {}))["result"]
        assert "make test" in segment["text"]  # the good agent file is still read
        assert {"part": "agentFiles", "path": "AGENTS\u0000.md",
                "reason": "holds a NUL byte, which no file name can hold"} in segment["leftOut"]

        await daemon.send({"jsonrpc": "2.0", "method": "workspace/didChangeWorkspaceFolders",
                           "params": {"event": {"added": [], "removed": [
                               {"uri": root.as_uri() + "/a%00b", "name": "odd"},
                               {"uri": root.as_uri(), "name": "root"}]}}})
        assert str(root.resolve()) in await daemon.shown("left the")

        good = [{"role": "user", "content": "look", "files": ["README.md"]}]
        trimmed = await daemon.request(3, "ctx/trim", {"messages": good, "budget": 1000})
        assert "A project for the daemon tests." in trimmed["result"]["messages"][0]["content"]
    finally:
        assert await daemon.close() == 0
