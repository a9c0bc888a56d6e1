"""A file attached to a session's message that is not read says why in its place, over real
stdio: a missing path, a directory and a named pipe vanished without a word (the message
showing only "see src"), where a binary file or a `.env` got a note."""

from __future__ import annotations

import os

import pytest
from conftest import result

pytestmark = pytest.mark.e2e

WHY = {"nonexistent.py": "no such file in the workspace", "src": "a directory",
       "pipe": "a named pipe", "src/app.py": None}


async def test_each_attachment_not_read_says_why(own_daemon, tmp_path):
    os.mkfifo(tmp_path / "repo" / "pipe")  # never opened: reading one waits for a writer
    await result(own_daemon, "ctx/session/open", {"sessionId": "s", "budget": 50000})
    await result(own_daemon, "ctx/session/append", {"sessionId": "s", "messages": [
        {"role": "user", "content": f"see {name}", "files": [name], "id": f"m{k}"}
        for k, name in enumerate(WHY)]})
    got = await result(own_daemon, "ctx/assemble", {"sessionId": "s"})
    shown = {m.get("id"): m["content"] for m in got["messages"]}
    for k, (name, why) in enumerate(WHY.items()):
        if why is None:
            assert "print('hello')" in shown[f"m{k}"]
        else:
            assert f"```{name}\n(not shown: {why}" in shown[f"m{k}"], shown[f"m{k}"]
