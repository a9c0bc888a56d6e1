"""One list of the names agents give a project's instruction files (the core's
`instructions.INSTRUCTION_FILES`): the workspace reads them and its watcher watches them (the
config's `agent_files` default), and prepare finds them in a client's messages. Three lists of
their own had drifted apart: prepare knew 7 names, the config default 7 others in part (no
CLAUDE.local.md, QWEN.md or CONVENTIONS.md), the workspace's "written for" table 6; a
.windsurfrules a client sent was summarized as any message, a QWEN.md never read."""

from __future__ import annotations

from pathlib import Path

from ws_helpers import make_ws, part, write

from ctxlayer.config import Config
from ctxlayer.core.assembly.instructions import NAMES, found
from ctxlayer.workspace.agents import WRITTEN_FOR

#: every name one of the three lists held before they were one
BEFORE = {"AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md", "QWEN.md", ".cursorrules",
          "CONVENTIONS.md", "COPILOT.md", ".github/copilot-instructions.md", ".windsurfrules"}


def claude_code(name: str) -> str:
    return (f"<system-reminder>\nContents of /repo/{name} (project instructions, checked into "
            f"the codebase):\n\nUse tabs, never spaces (MARK).\n</system-reminder>\nFix it.")


def codex(name: str) -> str:
    return f"# {name} instructions for /repo\n\n<INSTRUCTIONS>\nUse tabs (MARK).\n</INSTRUCTIONS>"


def test_the_workspace_its_watcher_the_config_and_prepare_know_the_same_names(repo: Path,
                                                                              home: Path):
    assert Config().workspace.agent_files == list(NAMES)
    assert set(NAMES) == BEFORE and len(NAMES) == len(BEFORE)
    assert set(WRITTEN_FOR) <= set(NAMES)
    for k, name in enumerate(NAMES):
        write(repo, name, f"Rule of {name}: keep it short (R{k}).\n")
    ws = make_ws(repo, home)
    text = part(ws.scan(), "agentFiles").text
    for k, name in enumerate(NAMES):
        assert f"(R{k})" in text, name  # read by default
        assert "agentFiles" in ws._affected(str(repo / name), False), name  # watched
        # found where Claude Code and Codex put it
        assert [f.body for f in found(claude_code(name))] == ["Use tabs, never spaces (MARK)."]
        assert [f.body for f in found(codex(name))] == ["Use tabs (MARK)."], name
