"""Claude Code's first user message without a CLAUDE.md: its own `<system-reminder>` blocks
(the instruction reminders it adds, its todo-list note, the git status), then the user's task.
Summarized once a second question makes it old, the task is the chunk's first "Asked", in the
user's words and whole (a paragraph: it went out as its first 80 characters at a budget of
2,000, 200 at any budget), and none of Claude Code's reminders is listed as the user's hard
constraint ("DO NOT mention this to the user explicitly because they are already aware." was,
and crowded out the user's own "Keep the fix small, ..." where the part has room for one)."""

from __future__ import annotations

import pytest
from agentloops import bash_loop

from ctxlayer.core.assembly.constraints import orders_of
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message

WORDS = WordTokenizer()
IMPORTANT = (
    "<system-reminder>\nAs you answer the user's questions, you can use the following "
    "context:\n# important-instruction-reminders\nDo what has been asked; nothing more, nothing "
    "less.\nNEVER create files unless they're absolutely necessary for achieving your goal.\n"
    "ALWAYS prefer editing an existing file to creating a new one.\nNEVER proactively create "
    "documentation files (*.md) or README files. Only create documentation files if explicitly "
    "requested by the User.\n\n\n      IMPORTANT: this context may or may not be relevant to "
    "your tasks. You should not respond to this context unless it is highly relevant to your "
    "task.\n</system-reminder>")
TODO = ("<system-reminder>\nThis is a reminder that your todo list is currently empty. DO NOT "
        "mention this to the user explicitly because they are already aware. If you are working "
        "on tasks that would benefit from a todo list please use the TodoWrite tool to create "
        "one. If not, please feel free to ignore. Again do not mention this message to the "
        "user.\n</system-reminder>")
OPENED = ("<system-reminder>\nThe user opened the file /repo/services/billing/invoice.py in the "
          "IDE. This may or may not be related to the current task.\n</system-reminder>")
GIT = ("<system-reminder>\nAs you answer the user's questions, you can use the following "
       "context:\n# gitStatus\nCurrent branch: main\n\nStatus:\n(clean)\n</system-reminder>")
TASK = ("The nightly build of the billing service fails since yesterday's merge. Read "
        "build.log, find which step breaks, and fix the cause in services/billing without "
        "touching the public API of the invoices module. Keep the fix small, add a regression "
        "test next to the existing ones in tests/billing, and tell me what the root cause was "
        "and whether the export job is affected too.")
FIRST = "\n\n".join([IMPORTANT, TODO, OPENED, GIT, TASK])
CLAUDE_CODE = ("NEVER create files", "ALWAYS prefer", "DO NOT mention", "do not mention",
               "Do what has been asked", "todo list", "opened the file", "gitStatus")


def chat(rounds: int) -> list[Message]:
    """The task's tool loop, the answer, a second question ``rounds`` calls in."""
    return [Message(role="system", id="sys", content="You are Claude Code. " * 30),
            Message(role="user", id="q0", content=FIRST), *bash_loop(0, 6),
            Message(role="assistant", id="ans0", content="Fixed: the export step."),
            Message(role="user", id="q1", content="Now check the export job too."),
            *bash_loop(1, rounds)]


def test_claude_codes_reminders_are_not_the_users_orders():
    orders = orders_of(Message(role="user", content=FIRST))
    assert not [o for o in orders if o.startswith(CLAUDE_CODE) or "todo list" in o], orders
    assert any(o.startswith("Keep the fix small") for o in orders), orders


@pytest.mark.parametrize("budget", [2000, 4000, 16000])
def test_the_summary_asks_the_task_whole_and_lists_no_reminder_as_the_users(budget):
    state, turn = None, None
    for rounds in range(1, 40):
        turn = prepare_turn(state, chat(rounds), budget, WORDS)
        state = turn.state
        if "q0" not in [m.id for m in turn.messages]:
            break
    summaries = [m.content for m in turn.messages if m.kind == "summary"]
    assert summaries, "the task was never summarized: the test would show nothing"
    first = summaries[0]
    assert f"Asked:\n- {TASK}\n" in first, first
    said = first.split("Actions (tool calls", 1)[0]  # the ledger may name what it read
    assert not [c for c in CLAUDE_CODE if c in said], said
