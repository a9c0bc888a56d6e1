"""A long log a user pasted, shortened: its first lines come first (what it was pasted for),
and are not sent again by the log's outline; errors that differ only in their numbers keep
their first and last lines verbatim beside their count."""

from __future__ import annotations

from collections import Counter

import pytest

from ctxlayer.core.compress.logs import LogOutline, error_lines, sanitize_log
from ctxlayer.core.compress.shorten import shorten_message
from ctxlayer.core.compress.tool_output import Reading
from ctxlayer.core.tokens import WordTokenizer, message_tokens
from ctxlayer.protocol import Message

ERROR = "2026-01-01 ERROR step 300 failed: disk full at /var/lib/db (errno 28)"


def _shortened(log: str, cap: int) -> tuple[str, int]:
    counter = WordTokenizer()
    m = Message(role="user", content="here is the log\n" + log)
    got = shorten_message(m, message_tokens(m, counter), cap, counter, least=200)
    assert got is not None
    return got[0].content, got[1]


def test_the_first_lines_of_a_pasted_log_are_sent_once():
    log = "\n".join(ERROR if k == 300 else f"2026-01-01 INFO step {k} ok" for k in range(600))
    text, tokens = _shortened(log, 1200)
    assert tokens <= 1200
    assert text.startswith("here is the log\n2026-01-01 INFO step 0 ok\n")
    assert ERROR in text
    sent = Counter(line for line in text.split("\n") if line in set(log.split("\n")))
    assert [line for line, n in sent.items() if n > 1] == []  # before: steps 0-54 twice
    assert "2026-01-01 INFO step 599 ok" in text  # its tail


def test_errors_differing_in_numbers_keep_their_first_and_last_lines():
    errors = {k: f"2026-01-01 ERROR job {k} failed: disk full at /var/lib/db{k % 7} (errno 28)"
              for k in (100, 200, 300, 400)}
    log = "\n".join(errors.get(k, f"2026-01-01 INFO step {k} ok") for k in range(500))
    out = sanitize_log(log, keep_lines=20).split("\n")
    # before: the first alone, "(x4)" after it; /var/lib/db1 only in the cut part's note
    assert errors[100] + " (x4)" in out
    assert errors[400] + " (the last of 4)" in out
    assert not {errors[200], errors[300]} & set(out)  # the ones between, counted
    assert out[-1] == "[log sanitized: 500 lines in, 3 kept, 497 dropped, 497 repeats collapsed]"


def test_a_summary_ledger_keeps_a_logs_distinct_error_lines_verbatim():
    from ctxlayer.core.compress.ledger import add_messages, render_ledger

    log = "\n".join([
        "2026-01-01 INFO step 1 ok", ERROR,
        "2026-01-01 ERROR step 301 failed: disk full at /var/lib/db (errno 28)",  # the same
        "Traceback (most recent call last):", '  File "src/run.py", line 3, in main',
        "KeyError: 'shard-7'", "FAILED tests/test_db.py::test_write - AssertionError",
        "2026-01-01 INFO step 2 ok", "the error handling is fine here"])
    ledger = add_messages(None, [Message(role="user", content="here is the log\n" + log)])
    text = render_ledger(ledger, 600).split("\n")
    # before: "- errors: 28", the path among the paths, no line of the log
    assert text[:4] == ["- error lines (verbatim):", "  - " + ERROR, "  - KeyError: 'shard-7'",
                        "  - FAILED tests/test_db.py::test_write - AssertionError"]
    assert not any("step 301" in line for line in text)
    # the kinds after them, but what the lines say already (the disk's path, the error's
    # code, the test) not again
    assert text[4:] == ["- lines: src/run.py line 3"], text
    assert len("\n".join(text)) <= 600


def test_an_error_line_reports_an_error_and_comes_from_what_was_written_not_a_tool():
    from ctxlayer.core.compress.ledger import ERROR_LINES, add_messages
    from ctxlayer.core.compress.logs import error_lines

    words = "\n".join(["**CRITICAL REQUIREMENTS:**", "<CRITICAL>",
                       "    except ValidationError as error:", "but I get the following error:",
                       "ERROR: while parsing the config", "src/a.c:3:5: error: expected ';'",
                       "ValueError"])
    # before: the first four too (an agent's instructions, code, prose); a bare exception's
    # name is code too (an except's tuple), an exception's own line says what went wrong
    assert error_lines(words) == ["ERROR: while parsing the config",
                                  "src/a.c:3:5: error: expected ';'"]
    tool = Message(role="tool", tool_call_id="c", content="ModuleNotFoundError: No module x")
    assert not add_messages(None, [tool]).kinds.get(ERROR_LINES)  # before: one


@pytest.mark.parametrize(("line", "reports"), [
    ("2024-01-01 12:00:00,123 - app.db - ERROR - disk full at /var/lib/db", True),
    ("ERROR step 300 failed: disk full at /var/lib/db (errno 28)", True),
    ("[ERROR] could not connect", True),
    ("Jan 01 12:00:00 host sshd[123]: FATAL no memory", True),
    ("E   AssertionError: assert 1 == 2", True),
    ("ValueError: bad value 5", True),
    ("FAILED tests/test_x.py::test_a - AssertionError", True),
    ("src/a.c:10:5: error: expected ';'", True),
    # the second review probe: prose and code that only name a level or an exception
    ("The ERROR handling in services/auth/login.py is wrong.", False),
    ("if state == FAILED and retries > 5:", False),
    ("    ValueError,", False),
    ("| ERROR | internal |", False),
    ("When FAILED logins happen we lock.", False),
    ("The CRITICAL path is login.", False),
    ("We have 3 FAILED tests now", False),
])
def test_a_line_reports_an_error_only_where_a_log_or_a_traceback_says_it(line, reports):
    assert bool(error_lines(line)) is reports


TRACE = ('Traceback (most recent call last):\n  File "a.py", line 3, in <module>\n    do()\n'
         "ValueError: bad item 7")
JSON_LINE = '{"level": "error", "msg": "boom", "stack": "at f (a.js:1:2)\\nat g (b.js:3:4)"}'


@pytest.mark.parametrize("head_lines", [1, 2, 5])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_logs_outline_after_its_first_lines_is_the_outline_of_what_follows_them(
        head_lines, newline):
    lines = ["please look", "", JSON_LINE, *TRACE.split("\n"), "", *(
        f"2026-01-01 INFO step {k} ok" for k in range(40)), JSON_LINE, ERROR]
    text = newline.join(lines)
    head = "\n".join(text.split("\n")[:head_lines])  # as `shorten` takes it: to a "\n"
    whole = Reading(text)
    whole.log()
    rest = whole.after(len(head) + 1)
    fresh = LogOutline(text[len(head) + 1:])
    assert rest.text == text[len(head) + 1:]
    for keep in (3, 10, 60):
        assert rest.log().render(keep) == fresh.render(keep)



@pytest.mark.parametrize("lead", ["\n\n", "   ", " \n\t"])
def test_a_pasted_log_after_blank_lines_is_shortened_as_without_them(lead):
    """The text is outlined after its first lines with its leading blanks stripped; the part
    after them was cut from the text as read, blanks and all: "\n\n" before the question
    sent a stray "e" of its last word and counted the question as a log line."""
    log = "\n".join(ERROR if k == 300 else f"2026-01-01 INFO step {k} ok" for k in range(600))
    counter = WordTokenizer()
    shortened = []
    for text in ("please look at why my worker crashed\n" + log,
                 lead + "please look at why my worker crashed\n" + log):
        m = Message(role="user", content=text)
        got = shorten_message(m, message_tokens(m, counter), 300, counter, least=200)
        assert got is not None
        shortened.append(got[0].content)
    assert shortened[1] == shortened[0]
    assert shortened[1].count("INFO step 0 ok") == 1


def test_a_log_pasted_in_one_fence_is_outlined_not_cut_by_its_ends():
    """One fenced block is cut by its first and last lines, numbered (a file added to aider),
    unless it reads as a log: then its outline keeps its errors."""
    log = "\n".join(ERROR if k == 300 else f"2026-01-01 INFO step {k} ok" for k in range(600))
    text, tokens = _shortened("```\n" + log + "\n```", 300)
    assert tokens <= 300 and ERROR in text and "lines 1-" not in text
