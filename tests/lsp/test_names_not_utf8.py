"""File and folder names whose bytes are not UTF-8 (old archives, other systems' encodings), in
a workspace without git: the daemon's segment and system prompt show each such byte as its
escape (`\\xff`). Before, `ctx/segment` and `ctx/systemPrompt` were internal errors every time
(the name's byte, held by Python as a lone surrogate, cannot be written as JSON), and a
workspace folder so named, sent as `file:///.../ws%FF` (as Neovim escapes it), was not found."""

from __future__ import annotations

import os
import sys

import pytest
from conftest import RawDaemon, hermetic_env

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="names are bytes on POSIX")


async def test_names_not_utf8_are_escaped_in_the_segment_and_the_prompt(tmp_path):
    root = tmp_path / os.fsdecode(b"ws\xff")
    (root / os.fsdecode(b"skills/s\xfe")).mkdir(parents=True)
    (root / os.fsdecode(b"skills/s\xfe") / "SKILL.md").write_text("---\ndescription: d\n---\n")
    (root / os.fsdecode(b"bad\xfdname.py")).write_text("X = 1\n")
    (root / "AGENTS.md").write_text("Always run the tests.\n")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path))
    try:
        await daemon.initialize(root)  # its URI ends in ws%FF
        segment = (await daemon.request(1, "ctx/segment", {}))["result"]
        assert "Always run the tests." in segment["text"]  # the folder was found
        assert '"bad\\xfdname.py"' in segment["text"] and "s\\xfe" in segment["text"]
        prompt = (await daemon.request(2, "ctx/systemPrompt", {}))["result"]
        assert any('"bad\\xfdname.py"' in m["content"] for m in prompt["messages"])
    finally:
        await daemon.close()
