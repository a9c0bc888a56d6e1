"""Golden files for the layered system prompt: each spec's full output, byte for byte.

Regenerate after an intended change with `CTXLAYER_UPDATE_GOLDEN=1 .venv/bin/pytest
tests/core/test_prompt_golden.py` and review the diff of tests/core/golden/.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctxlayer.core.prompt import (
    ConversationDigest,
    ModelTraits,
    PromptSpec,
    Skill,
    SystemPrompt,
    build_system_prompt,
)
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import ToolSpec

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("CTXLAYER_UPDATE_GOLDEN") == "1"

SHELL = ToolSpec(
    name="shell",
    instructions="Run a command in a bash shell in the workspace. Output is returned.",
    examples="ls -la\ngit status",
)
READ = ToolSpec(name="read", instructions="Read a file by path, relative to the workspace.")
SEARCH = ToolSpec(
    name="search",
    instructions=" ".join(f"Search step {i} matches files by content and path." for i in range(40)),
    examples='{"query": "TODO"}',
)
PARTS = [
    ("agentFiles", "# Agent instructions (follow them)\n\n## AGENTS.md\nRun `make test` first."),
    ("files", "# Selected files\n\n## README.md\nctxlayer demo project."),
    ("tree", "# Project tree\n\nREADME.md\nsrc/\n  app.py"),
    ("git", "# Git\n\nbranch: main\nmodified: src/app.py"),
]
SKILLS = [Skill("release", "Cut a release:\nbump, tag, publish.", "skills/release/SKILL.md")]
DIGESTS = [
    ConversationDigest("Fix the parser", "The parser fails on tabs.", "I will look at lexer.py.",
                       "Fixed: tabs are now whitespace in lexer.py.", 12),
    ConversationDigest("hi", "hi", "Hello!", "Hello!", 2),
]

CASES: dict[str, PromptSpec] = {
    "minimal": PromptSpec(),
    "interactive_markdown": PromptSpec(
        tools=[SHELL, READ], user_identity="Ana, backend developer; prefers terse answers.",
        workspace_parts=PARTS, skills=SKILLS,
    ),
    "noninteractive_xml_enforced": PromptSpec(
        interactive=False, user_identity="Never shown: nobody is present.", tool_format="xml",
        tools=[SHELL, ToolSpec(name='a"b', instructions="Quote <me> & escape.")],
        traits=ModelTraits(native_reasoning=True, enforce_tool_use=True),
        workspace_parts=PARTS,
    ),
    "native_reasoning_model": PromptSpec(
        tool_format="tool", tools=[SHELL, SEARCH],
        tool_format_overrides={"tool/shell": "Run one bash command; returns its output."},
        traits=ModelTraits(native_reasoning=True, reasoning_model=True),
    ),
    "native_plain_model": PromptSpec(tool_format="tool", tools=[SHELL, SEARCH]),
    "selective_dynamic": PromptSpec(
        tools=[READ], context_mode="selective", include=["files", "cmd", "history"],
        workspace_parts=PARTS, skills=SKILLS, context_cmd="$ make lint\nall checks passed\n",
        history=DIGESTS,
    ),
    "compact_dynamic": PromptSpec(
        compact=True, tools=[SHELL], workspace_parts=PARTS[2:], skills=SKILLS,
        context_cmd="load average 0.42", history_text="Last time: added the watcher.",
        tool_format_overrides={"markdown": "Tools run when you write a tagged block."},
    ),
}


def render(result: SystemPrompt) -> str:
    lines: list[str] = []
    for i, m in enumerate(result.messages):
        lines.append(f"=== message {i} id={m.id} role={m.role} pinned={m.pinned} hide={m.hide}")
        lines.append(m.content)
    lines.append("=== sections")
    lines += [f"{s.name} tokens={s.tokens} hash={s.hash} cacheable={s.cacheable}"
              for s in result.sections]
    lines.append(f"=== cache_boundary={result.cache_boundary} tokens={result.tokens} "
                 f"prefix_hash={result.prefix_hash}")
    lines.append("=== warnings")
    lines += result.warnings
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    got = render(build_system_prompt(CASES[case], WordTokenizer())).encode("utf-8")
    path = GOLDEN / f"prompt_{case}.txt"
    if UPDATE:
        path.write_bytes(got)
    assert path.exists(), f"{path.name} missing: run with CTXLAYER_UPDATE_GOLDEN=1"
    want = path.read_bytes()
    assert got == want, f"{path.name} differs (CTXLAYER_UPDATE_GOLDEN=1 to accept)"


def test_every_golden_file_has_a_case() -> None:
    names = {p.name for p in GOLDEN.glob("prompt_*.txt")}
    assert names == {f"prompt_{c}.txt" for c in CASES}
