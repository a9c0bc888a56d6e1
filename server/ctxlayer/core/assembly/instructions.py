"""The user's instruction files a client puts into a user message: their standing rules.

Claude Code puts CLAUDE.md (and the user's own ~/.claude/CLAUDE.md, CLAUDE.local.md) into a
`<system-reminder>` of the first user message, each as "Contents of PATH (what it is):" and
the file's text; Codex sends "# AGENTS.md instructions for DIR" and the text between
`<INSTRUCTIONS>` tags as a user message of its own. The same is read of the other names agents
give such a file (`NAMES`). A summary keeps only what looks like an order, sentence by
sentence ("Use pnpm, not npm or yarn." is none, nor is "Money is stored as integer cents"),
so prepare keeps the message carrying them as it was sent, ahead of the summaries, and cuts
it only past a share of the budget, to the files' texts (core/prepare/rules.py). The words a
client wraps around them (its git status, its attribution reminder, any other reminder) are
its own, never the user's constraints (`as_said`).
Must not: count tokens, know about the wire beyond a message's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the names agents give the file of a project's standing instructions, in the order a
#: folder's are read (gptme 0.35.1's, the others after the tool's own name), each with the tool
#: it is written for (None: any agent's). The one list: the workspace reads these files
#: (config's `agent_files` default), its watcher watches them, and prepare finds them in a
#: client's messages; three lists of their own had drifted apart (prepare never knew
#: .windsurfrules, the workspace never read QWEN.md)
INSTRUCTION_FILES: tuple[tuple[str, str | None], ...] = (
    ("AGENTS.md", None),
    ("CLAUDE.md", "Claude Code"),
    ("CLAUDE.local.md", "Claude Code"),
    ("COPILOT.md", "GitHub Copilot"),
    ("GEMINI.md", "Gemini CLI"),
    ("QWEN.md", "Qwen Code"),
    (".github/copilot-instructions.md", "GitHub Copilot"),
    (".cursorrules", "Cursor"),
    (".windsurfrules", "Windsurf"),
    ("CONVENTIONS.md", None),  # aider's, read with --read
)
NAMES = tuple(name for name, _ in INSTRUCTION_FILES)
#: the files written for one particular tool, and that tool's name
WRITTEN_FOR = {name: tool for name, tool in INSTRUCTION_FILES if tool is not None}
_NAME = "|".join(re.escape(n) for n in NAMES)
#: Claude Code's: "Contents of /repo/CLAUDE.md (project instructions, ...):", blank line, text,
#: up to the next file, the next section Claude Code adds ("# currentDate", its own
#: "# important-instruction-reminders": "NEVER create files unless ..." read as the user's),
#: its closing note or the end of the reminder
_CONTENTS = re.compile(
    r"(?P<head>Contents of (?P<path>[^\n]*?(?:" + _NAME + r")) \([^\n]*\):\n\n?)"
    r"(?P<body>.*?)(?=\n+Contents of [^\n]+ \([^\n]*\):\n|\n+# currentDate\n|"
    r"\n+# important-instruction-reminders\n|"
    r"\n\s*IMPORTANT: this context may or may not be relevant|\n*</system-reminder>|\Z)",
    re.DOTALL)
#: Codex's: "# AGENTS.md instructions for /repo", then the text in <INSTRUCTIONS> tags
_TAGGED = re.compile(
    r"(?P<head>#\s*(?P<path>(?:" + _NAME + r")) instructions for [^\n]*\n+<INSTRUCTIONS>\n?)"
    r"(?P<body>.*?)(?=\n?</INSTRUCTIONS>|\Z)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Instructions:
    """One instruction file as a message carries it: the words that introduce it (kept with
    it), the file's name as given, its text."""

    head: str
    path: str
    body: str
    framed: bool  # inside a <system-reminder> (Claude Code), else in <INSTRUCTIONS> tags


def carries(content: str) -> bool:
    """Whether a user message's text may carry an instruction file (cheap: no regex)."""
    return ("Contents of " in content or "<INSTRUCTIONS>" in content) \
        and any(n in content for n in NAMES)


def found(content: str) -> list[Instructions]:
    """The instruction files in a user message's text, in order."""
    if not carries(content):
        return []
    out = [Instructions(m["head"], m["path"], m["body"].strip("\n"), "<system-reminder>" in
                        content[:m.start()]) for m in _CONTENTS.finditer(content)]
    out += [Instructions(m["head"], m["path"], m["body"].strip("\n"), False)
            for m in _TAGGED.finditer(content)]
    return [f for f in out if f.body.strip()]


def texts(content: str) -> list[str]:
    """The instruction files' texts in a user message (what the user wrote in them)."""
    return [f.body for f in found(content)]


_REMINDER = re.compile(r"<system-reminder>(.*?)(?:</system-reminder>|\Z)", re.DOTALL)


def as_said(content: str) -> str:
    """A user message's text as the user said it: each `<system-reminder>` that carries an
    instruction file is replaced by the files' texts, any other is left out. Claude Code
    writes those of its own (its git status, the attribution it asks commits to carry, its
    todo-list note, the file open in the IDE, its own instruction reminders): kept unless
    one of a few known openings, "DO NOT mention this to the user explicitly because they are
    already aware." (its todo-list note) was listed as the user's hard constraint, and crowded
    out the user's own orders beside it."""
    if "<system-reminder>" not in content:
        return content

    def one(m: re.Match[str]) -> str:
        return "\n\n".join(texts(m.group(1)))
    return _REMINDER.sub(one, content)
