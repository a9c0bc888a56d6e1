"""A line is what "\\n", "\\r\\n" or "\\r" ends, nothing else: whatever quotes lines (a log's
outline, an action's target, a ledger's commands, a summary carried forward, an audit's first
line) quotes them whole. `str.splitlines` also breaks at form feeds, vertical tabs,
\\x1c-\\x1e, NEL and U+2028/U+2029, which a line can hold (a page break in a build log, a JS
string's line separator): a log outline quoted each half as a line of its own."""

from __future__ import annotations

import json

import pytest

from ctxlayer.core.assembly.actions import target_of
from ctxlayer.core.assembly.summary import offline_summary
from ctxlayer.core.compress.ledger import shell_commands
from ctxlayer.core.compress.logs import sanitize_log
from ctxlayer.core.text import one_line, split_lines
from ctxlayer.protocol import Message, ToolCall

#: the characters `str.splitlines` breaks a line at that end no line here
INSIDE = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("mark", INSIDE, ids=[f"U+{ord(c):04X}" for c in INSIDE])
def test_a_log_outline_quotes_a_line_holding_a_break_whole(mark):
    line = f"ERROR: page break{mark}after formfeed in E501"
    text = "\n".join([*(f"[INFO] step {k} ok" for k in range(100)), line,
                      *(f"[INFO] step {k} ok" for k in range(100, 200))])
    out = sanitize_log(text)
    assert line in out.split("\n"), out
    assert "[log sanitized: 201 lines in," in out  # the lines "\n" ends, as the audit counts


def test_the_line_ends_a_log_outline_splits_at():
    out = sanitize_log("ERROR: one failed\r\nERROR: two failed\rERROR: three failed\n")
    assert out.split("\n")[:3] == ["ERROR: one failed", "ERROR: two failed",
                                   "ERROR: three failed"]
    assert "3 lines in" in out
    assert split_lines("a\r\nb\rc\n\nd\x0ce\n") == ["a", "b", "c", "", "d\x0ce"]
    assert split_lines("") == [] and split_lines("\n") == [""]


def test_a_log_outline_keeps_a_lines_own_nul_byte():
    """The denoiser marks what it removes with NUL bytes: it removed the line's own too,
    "nul\\x00byte" quoted as "nulbyte"; a line's own bracket of them stays as well."""
    out = sanitize_log("\n".join(["2026-12-07T10:00:00Z ERROR: nul\x00byte E507", "[INFO] ok",
                                  "[pid 42] ERROR: sent (\x00) (3.2s)", "[INFO] done"]))
    assert out.split("\n")[:3] == ["ERROR: nul\x00byte E507", "[INFO] ok",
                                   "ERROR: sent (\x00)"], out


def test_a_calls_target_keeps_its_first_line_whole():
    target = target_of(json.dumps({"command": "printf 'page\x0cbreak' > out.txt\nls"}))
    assert target == "printf 'page break' > out.txt", target


def test_the_ledgers_commands_keep_their_first_line_whole():
    msg = Message(role="assistant", content="", tool_calls=[
        ToolCall(id="c1", name="bash", arguments=json.dumps(
            {"command": "node -e 'say(\"a\u2028b\")' && make test\necho done"}))])
    assert shell_commands(msg) == ["node -e 'say(\"a\u2028b\")' && make test"]


def test_a_summary_carries_an_earlier_item_holding_a_break_whole():
    previous = "Asked:\n- fix the parser\u2028in src/parse.py line 12\n"
    summary = offline_summary([], previous, 2000)
    assert "fix the parser\u2028in src/parse.py line 12" in summary, summary


def test_an_audits_first_line_is_the_whole_line():
    assert one_line("\n\nERROR: page break\x0cafter formfeed\nmore") == \
        "ERROR: page break\x0cafter formfeed"
