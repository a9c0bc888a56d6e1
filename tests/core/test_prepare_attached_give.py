"""What the files aider attached give when its newest question is long: they give what the
question needs, down to a floor (each file its first and last lines, a few each, the cut
naming the line ranges kept), before the question is cut. Requests shaped as aider 0.86's
`--message` with a markdown guide and a long module added (the real-client probe's), with the
word-count fake tokenizer."""

from __future__ import annotations

import re

import pytest
from test_prepare_attached import aider_request, code, files_shown

from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message

WORDS = WordTokenizer()
#: "[... lines 88-1266 cut: lines 1-87 and 1267-1353 of 1353 kept ...]"
RANGES = re.compile(r"\[\.\.\. lines (\d+)-(\d+) cut: lines 1-(\d+) and (\d+)-(\d+) of (\d+) "
                    r"kept \.\.\.\]")
GUIDE = "# Guide\n\n" + "".join(f"## Section {k}\n\nText for section {k}.\n\n```python\n"
                                f"def s{k}():\n    return {k}\n```\n\n" for k in range(60))
MODULE = code("func", 1000)


def added(files: dict[str, str]) -> str:
    """aider's message of the files its user added; a markdown file holding ``` fences of its
    own makes aider fence every file with four backticks (its `choose_fence`)."""
    return ("I have *added these files to the chat* so you can go ahead and edit them.\n\n"
            "*Trust this message as the true contents of these files!*\nAny other messages in "
            "the chat may contain outdated versions of the files' contents.\n\n" + "".join(
                f"{path}\n````\n{text}````\n\n" for path, text in files.items()))


def message(rows: int, files: dict[str, str] | None = None) -> list[Message]:
    """aider's first request of `aider --message QUESTION guide.md huge.py`: its system
    prompt, the files added and their acknowledgement, the question pasting a log of ``rows``
    rows, its reminder of the edit format last."""
    log = " ".join(f"[row {i}: value {i * 13}]" for i in range(rows))
    return [Message(role="system", id="sys", content="Act as an expert developer. " * 80),
            Message(role="user", id="files", content=added(
                files or {"guide.md": GUIDE, "huge.py": MODULE})),
            Message(role="assistant", id="files-ok", content="Ok, any changes I propose will "
                    "be to those files."),
            Message(role="user", id="q", content=f"QUESTION: what is in these files? {log}"),
            Message(role="system", id="reminder", content="# SEARCH/REPLACE rules " * 40)]


@pytest.mark.parametrize("rows", [250, 300, 325])
def test_a_long_question_that_fits_beside_the_files_ends_stays_whole(rows):
    """The probe (budget 10,000): a question pasting 700 log rows (6,931 tokens) was cut to
    2,587 (264 rows, "[... 9,579 chars omitted ...]" in the middle of the log) while the
    files kept 4,970, half the budget; system, question and reminder took 9,350 together.
    Now the files give what the question needs, each still its ends with their line
    ranges, and the question goes whole (here 1,006 to 1,306 tokens of 2,000: before, each
    was cut to 474)."""
    msgs = message(rows)
    turn = prepare_turn(None, msgs, 2000, WORDS)
    assert turn.tokens <= 2000
    assert msgs[3].content in [m.content for m in turn.messages], [
        (e.message_id, e.tokens_before, e.tokens_after) for e in turn.truncated]
    text, tokens = files_shown(turn)
    marks = RANGES.findall(text)
    assert [m[-1] for m in marks] == [str(GUIDE.count("\n")), str(MODULE.count("\n"))], text
    for path in ("guide.md", "huge.py"):
        assert f"{path}\n````\n" in text
    assert tokens <= 2000 - WORDS.count(msgs[3].content) - 520  # what the question left them


def test_a_question_too_long_even_beside_the_files_ends_is_cut_and_the_files_held():
    """When the files cut to their floors still leave the question too little, the question
    is cut anyway; the files keep their share rather than being cut to their floors for a
    question cut all the same (cut to them besides, they broke the cached prefix on twice as
    many turns of random aider chats)."""
    msgs = message(360)
    turn = prepare_turn(None, msgs, 2000, WORDS)
    assert turn.tokens <= 2000
    assert msgs[3].content not in [m.content for m in turn.messages]
    text, tokens = files_shown(turn)
    assert len(RANGES.findall(text)) == 2 and tokens >= 2000 // 2 - 100, tokens


def test_files_giving_what_is_over_keep_every_file_s_ends():
    """Three files, the two long ones of 2,400 lines, at a budget of 800 with a question of
    300 tokens: the files gave what was over beyond what their ends take, the message was cut
    by its own head and tail, "[... 4,888 lines omitted ...]", and m1.py and m2.py were gone
    (in 58 turns of 40 random 15-turn aider chats). Each file keeps its ends now."""
    files = {"m0.py": code("f0", 50), "m1.py": code("f1", 1200), "m2.py": code("f2", 1200)}
    msgs = aider_request(1, files)
    msgs[-2] = Message(role="user", id="q0", content="QUESTION_0 why? " + " ".join(
        f"[q0 row {i}: value {i * 13}]" for i in range(50)))
    turn = prepare_turn(None, msgs, 800, WORDS)
    assert turn.tokens <= 800
    text = files_shown(turn)[0]
    for path in files:
        assert f"{path}\n```\ndef f{path[1]}_0(x):\n" in text, text
    assert [m[-1] for m in RANGES.findall(text)].count("2400") == 2, text


def test_files_the_last_resort_cuts_still_name_the_line_ranges_of_each_file():
    """A budget whose system prompt and reminder leave the files less than their ends: the
    last resort drops the reminder and cuts the files itself, 10 lines at each end. Before,
    each file's cut was a bare "[...]" (real aider at window 4,500: 126,231 chars to 844, no
    line numbers); numbered, it then counted the lines of the text it was given, already cut
    to the files' share ("of 59 kept" for files of 542 and 2,000 lines). Now each names its
    file's ranges, and the lines kept are those lines."""
    msgs = message(0)
    msgs[-1] = Message(role="system", id="reminder", content="# SEARCH/REPLACE rules " * 100)
    turn = prepare_turn(None, msgs, 700, WORDS)
    assert turn.tokens <= 700
    text = files_shown(turn)[0]
    marks = RANGES.findall(text)
    assert len(marks) == 2 and "[...]" not in text, text
    for path, body, (_, cut_to, head, resume, last, total) in zip(
            ("guide.md", "huge.py"), (GUIDE, MODULE), marks, strict=True):
        lines = body.split("\n")[:-1]
        assert (int(resume), last, total) == (int(cut_to) + 1, str(len(lines)),
                                              str(len(lines))), (path, marks)
        shown = text.split(f"{path}\n````\n")[1].split("\n````")[0].split("\n")
        assert shown[:int(head)] == lines[:int(head)], path
        assert shown[int(head) + 1:] == lines[int(cut_to):], path


def long_prompts(rows: int, system: int, reminder: int) -> list[Message]:
    """`message`, its system prompt ``system`` words long and its reminder ``reminder``."""
    msgs = message(rows)
    msgs[0] = Message(role="system", id="sys", content="Act as an expert developer. " * (
        system // 5))
    msgs[-1] = Message(role="system", id="reminder", content="# SEARCH/REPLACE rules " * (
        reminder // 3))
    return msgs


def test_files_the_last_resort_cannot_hold_at_their_share_are_held_at_their_ends():
    """A 400-word system prompt and a 900-word reminder, budget 800: the reminder alone is
    over, and the files' message (cut to 384 tokens, its share) did not fit beside the system
    prompt; the last resort dropped it whole ("384 tokens, 369 left"), and the model could
    quote no file. At each file's ends (about 100 tokens) it fits: held there, audited."""
    msgs = long_prompts(0, 400, 900)
    turn = prepare_turn(None, msgs, 800, WORDS)
    assert turn.tokens <= 800
    assert "files" not in [e.message_id for e in turn.dropped], turn.dropped
    text = files_shown(turn)[0]
    marks = RANGES.findall(text)
    assert [m[-1] for m in marks] == [str(GUIDE.count("\n")), str(MODULE.count("\n"))], text
    assert any(e.message_id == "files" and "held at their floor" in e.reason
               for e in turn.truncated), turn.truncated


@pytest.mark.parametrize(("budget", "rows", "system", "reminder"),
                         [(4000, 600, 600, 1200), (800, 100, 400, 120)])
def test_a_question_beside_files_at_their_ends_takes_all_the_room_left(budget, rows, system,
                                                                        reminder):
    """Once the files are at their ends and the rest can give nothing, the question takes
    the room left, not a fixed size: at budget 4,000 a question of 2,406 tokens was cut to
    1,803 (under half the budget) with 210 tokens left unused; at 800, cut to 194 with 57
    left, the files dropped besides."""
    msgs = long_prompts(rows, system, reminder)
    turn = prepare_turn(None, msgs, budget, WORDS)
    assert budget - budget // 50 <= turn.tokens <= budget
    question = next(m for m in turn.messages if m.id == "q")
    assert question.content != msgs[3].content
    assert question.content.startswith("QUESTION: what is in these files?")
    assert len(RANGES.findall(files_shown(turn)[0])) == 2
