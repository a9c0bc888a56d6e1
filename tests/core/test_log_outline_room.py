"""A log's outline grows with the room it has, and its audit names a room that is true: a
1,560-line log whose errors repeat collapses to an outline of 21 lines, which took 5,160
tokens of an 8,000-token budget (the log's first and last lines were added only under half
its cap) and was said to be "in 8500 tokens, the room the fit left"."""

from __future__ import annotations

import re

import pytest

from ctxlayer.core.compress.tool_output import ENDS_HEADER, compress_tool_output
from ctxlayer.core.tokens import CountCache, WordTokenizer
from ctxlayer.core.trim import trim
from ctxlayer.protocol import Message, ToolCall
from ctxlayer.tokenizers import counter_for

WORDS = CountCache(WordTokenizer())
REAL = counter_for("gpt-4o")

#: an error line of 13,000 characters, and one of 700 words
LONG = "ERROR: payload rejected: " + ",".join(f"field_{k}=value_{k}" for k in range(700))
WORDY = " ".join(f"ERROR: payload rejected field_{k}" for k in range(700))


def job_log(long: str) -> str:
    """1,500 steps, and five times the same errors: eight short ones, a long one and a
    traceback."""
    lines = []
    for k in range(1500):
        lines.append(f"[INFO] step {k} ok")
        if k % 300 == 150:
            lines += [f"ERROR: failure E50{j}" for j in range(8)] + [long]
            lines += ["Traceback (most recent call last):",
                      f'  File "/src/app{k}.py", line {k}, in <module>', f"KeyError: 'x{k}'"]
    return "\n".join(lines)


def test_an_outline_over_half_its_cap_shows_the_logs_ends_in_the_rest():
    """Its 16 lines took 2,875 of 5,000 tokens: over half, so the log's own first and last
    lines were left out of the 2,125 left."""
    out = compress_tool_output(job_log(WORDY), 5000, WORDS)
    assert out is not None and out.method == "log"
    assert 0.9 * 5000 <= out.tokens_after <= 5000, out.tokens_after
    assert ENDS_HEADER in out.text and "[INFO] step 1499 ok" in out.text
    assert "ERROR: failure E507" in out.text and "KeyError: 'x1350'" in out.text


@pytest.mark.parametrize("cap", [2000, 2500])
def test_a_long_error_line_between_the_ends_leaves_the_outline_its_room(cap):
    """The outline of the lines between the log's ends picks its own lines: at the number
    of lines the whole log's outline fitted in (a few, the long line left out), it took the
    700-word line, over the cap, and the log went out in 45 tokens of 2,000."""
    out = compress_tool_output(job_log(WORDY), cap, WORDS)
    assert out is not None and out.method == "log"
    assert 0.8 * cap <= out.tokens_after <= cap, out.tokens_after
    assert ENDS_HEADER in out.text and "ERROR: failure E50" in out.text


def chat(text: str) -> list[Message]:
    return [Message(role="user", content="run it", id="task"),
            Message(role="assistant", content="", id="call",
                    tool_calls=[ToolCall(id="c1", name="sh", arguments="{}")]),
            Message(role="tool", content=text, tool_call_id="c1", id="log"),
            Message(role="user", content="why did it fail?", id="question")]


@pytest.mark.parametrize("budget", [3000, 5000, 8000, 12000])
def test_a_log_outline_uses_its_room_and_names_a_true_one(budget):
    """Before: 271 tokens of 3,000 (the long line again), 1,809 of 5,000, 5,109 of 8,000
    said to be "in 8500 tokens", 12,000 said of a room of 11,968."""
    report = trim(chat(job_log(LONG)), budget, REAL)
    (entry,) = report.truncated
    assert entry.message_id == "log" and entry.action == "compressed"
    assert 0.9 * budget <= report.tokens <= budget, report.tokens
    room = int(re.search(r"outline in (\d+) tokens, the room the fit left", entry.reason)[1])
    others = report.tokens - entry.tokens_after
    assert room <= budget - others, (entry.reason, budget - others)
