"""The files a client attaches in front of its conversation and sends again every turn (aider's
`--read` files, its repo map, the files its user added to the chat) are kept whole by a live
chat's steps, or by each file's first and last lines when they pass their share of the budget,
and their new contents, written in place, are what is sent. Requests shaped as aider 0.86 sends
them (recorded through the gateway), turn by turn, with the word-count fake tokenizer."""

from __future__ import annotations

import dataclasses
import re

import pytest

from ctxlayer.core.compress.shorten import shorten_message
from ctxlayer.core.prepare import DEFAULT_POLICY, persist, prepare_turn, resuming
from ctxlayer.core.prepare.aider_files import attached
from ctxlayer.core.prepare.attached import CUT, GREW
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message

WORDS = WordTokenizer()
CONVENTIONS = ("Here are some READ ONLY files, provided for your reference.\nDo not edit these "
               "files!\n\nCONVENTIONS.md\n```\n# Conventions\n- Use 4-space indentation.\n"
               "- CONV-ZEBRA: public functions need type hints.\n```\n")
REPO_MAP = ("Here are summaries of some files present in my git repository.\nDo not propose "
            "changes to these files, treat them as *read-only*.\nIf you need to edit any of "
            "these files, ask me to *add them to the chat* first.\n\nREADME.md\n")


def added(files: dict[str, str]) -> str:
    return ("I have *added these files to the chat* so you can go ahead and edit them.\n\n"
            "*Trust this message as the true contents of these files!*\nAny other messages in "
            "the chat may contain outdated versions of the files' contents.\n\n" + "".join(
                f"{path}\n```\n{text}```\n\n" for path, text in files.items()))


ADDER = "def add(a, b):\n    return a + b\n"


def aider_request(questions: int, files: dict[str, str] | None = None) -> list[Message]:
    """aider's request after ``questions`` questions, none of them answered by an edit (its
    `cur_messages` grow after the files): system, read-only files, repo map, the chat's
    files, each acknowledged, the questions (each pasting a log), the reminder."""
    out = [Message(role="system", id="sys", content="Act as an expert software developer. " * 30),
           Message(role="user", id="ro", content=CONVENTIONS),
           Message(role="assistant", id="ro-ok", content="Ok, I will use these files as "
                   "references."),
           Message(role="user", id="map", content=REPO_MAP),
           Message(role="assistant", id="map-ok", content="Ok, I won't try and edit those "
                   "files without asking first."),
           Message(role="user", id="files", content=added(files or {"adder.py": ADDER})),
           Message(role="assistant", id="files-ok", content="Ok, any changes I propose will "
                   "be to those files.")]
    for k in range(questions):
        if k:
            out.append(Message(role="assistant", id=f"a{k - 1}", content=f"answer {k - 1}"))
        log = " ".join(f"[q{k} row {i}: value {i * 13}]" for i in range(60))
        out.append(Message(role="user", id=f"q{k}", content=f"QUESTION_{k} why? {log}"))
    out.append(Message(role="system", id="reminder", content="# SEARCH/REPLACE rules " * 20))
    return out


def test_the_files_aider_attached_stay_whole_once_its_questions_are_summarized():
    """Before, the first step summarized the conventions and adder.py with the first
    questions, leaving only their paths in the ledger, on every later request."""
    state, steps = None, 0
    for n in range(1, 12):
        msgs = aider_request(n)
        turn = prepare_turn(state, msgs, 1200, WORDS)
        sent = [m.content for m in turn.messages]
        assert turn.tokens <= 1200
        for whole in (CONVENTIONS, REPO_MAP, added({"adder.py": ADDER})):
            assert whole in sent, (n, sent)
        steps += any(m.kind == "summary" for m in turn.messages)
        state = turn.state
    assert steps >= 3  # the questions were summarized around them


def test_new_contents_written_in_place_are_sent_and_the_summaries_stay():
    """aider re-sends adder.py's new contents (edited outside it) where the old ones were.
    Before, the window started again and all of it was summarized anew, the files too; now
    it carries over: the same summaries, the new contents whole, the old ones gone."""
    state = None
    for n in range(1, 9):
        turn = prepare_turn(state, aider_request(n), 1200, WORDS)
        state = turn.state
    chunks = [m.content for m in turn.messages if m.kind == "summary"]
    assert chunks
    edited = {"adder.py": "def add(a, b):\n    return a - b  # EDITED_OUTSIDE\n"}
    turn = prepare_turn(state, aider_request(9, edited), 1200, WORDS)
    sent = [m.content for m in turn.messages]
    assert added(edited) in sent
    assert not any("return a + b" in c for c in sent)
    assert [m.content for m in turn.messages if m.kind == "summary"][:len(chunks)] == chunks
    # the system prompt, the conventions and the map before the new file are the same prefix
    assert turn.cache_reuse_tokens > 0


def test_files_over_their_share_keep_each_file_s_ends_and_their_text_on_later_turns():
    """Two files of 400 lines in a budget of 3,000: shown by their first and last lines, each
    verbatim, said in the audit; the next turns send the same text (the prefix holds) and never
    summarize them."""
    files = {f"mod{k}.py": "".join(f"def f{k}_{j}(x): return x + {j}\n" for j in range(400))
             for k in range(2)}
    state, first = None, None
    for n in range(1, 10):
        turn = prepare_turn(state, aider_request(n, files), 3000, WORDS)
        assert turn.tokens <= 3000
        shown = next(m.content for m in turn.messages if m.id == "files")
        if first is None:
            first = shown
            assert any(e.reason == CUT for e in turn.truncated)
            for k in range(2):
                assert f"def f{k}_0(x): return x + 0\n" in shown
                assert f"def f{k}_399(x): return x + 399\n" in shown
            assert len(shown) < len(added(files))
        assert shown == first, n
        state = turn.state


def test_which_messages_are_attached_files():
    """aider's openings in each of its modes, with the acknowledgement after each; a user's
    question that only quotes one is no attached file."""
    ask_map = ("I am working with you on code in a git repository.\nHere are summaries of some "
               "files present in my git repo.\n\nREADME.md\n")
    none = ("Don't try and edit any existing code without asking me to add the files to the "
            "chat!\n")
    msgs = [Message(role="system", content="Act as an expert software developer."),
            Message(role="user", content=ask_map),
            Message(role="assistant", content="Ok, I won't try and edit those files."),
            Message(role="user", content=none),
            Message(role="assistant", content="Ok, based on your requests I will suggest "
                    "which files need to be edited."),
            Message(role="user", content="Why did you say 'I have *added these files to the "
                    "chat*'?"),
            Message(role="assistant", content="Because you did.")]
    assert attached(msgs) == {1, 2, 3, 4}


def applied_edits_request(k: int) -> list[Message]:
    """aider's request after ``k`` questions each answered by an applied edit: the answered
    turns move into its done history, before the files it sends again (with the edits in
    them), so the files' message is one exchange further on every turn."""
    out = aider_request(0)[:5]
    for j in range(k):
        log = " ".join(f"[q{j} row {i}: value {i * 13}]" for i in range(60))
        out += [Message(role="user", id=f"q{j}", content=f"QUESTION_{j} fix it {log}"),
                Message(role="assistant", id=f"a{j}", content=f"edit {j} applied " * 5)]
    body = ADDER + "".join(f"# change {j}\n" for j in range(k))
    out += [Message(role="user", id="files", content=added({"adder.py": body})),
            Message(role="assistant", id="files-ok", content="Ok, any changes I propose will "
                    "be to those files."),
            Message(role="user", id=f"q{k}", content=f"QUESTION_{k} now this " + "word " * 40),
            Message(role="system", id="reminder", content="# SEARCH/REPLACE rules " * 20)]
    return out


def test_the_files_moving_on_after_each_applied_edit_do_not_make_the_window_again():
    """The review probe: a step left the files' message below the boundary, and aider moving
    it one exchange on made the window again on every turn (turns 3 to 11 each stepped, all
    of the history summarized anew, 291 tokens reused of about 520 sent, 43% of the budget)."""
    state, steps = None, 0
    for k in range(12):
        turn = prepare_turn(state, applied_edits_request(k), 1200, WORDS)
        state = turn.state
        sent = " ".join(m.content for m in turn.messages)
        assert CONVENTIONS in sent and (k == 0 or f"# change {k - 1}" in sent), k
        assert turn.tokens <= 1200
        steps += turn.stepped
        if k >= 4 and not turn.stepped:  # carried over: all of the last request reused
            assert turn.cache_reuse_tokens > 300, (k, turn.cache_reuse_tokens)
    assert steps <= 6, steps


def test_a_long_answer_after_a_message_that_only_opens_like_aiders_is_no_acknowledgement():
    # kept whole as aider's acknowledgement, a 900-word answer to a user who pasted aider's
    # words was dropped whole by the fit, in no summary
    msgs = [Message(role="user", id="u", content="I am not sharing any files that you can edit "
                    "yet."),
            Message(role="assistant", id="a", content="word " * 900),
            Message(role="user", id="q", content="and now?")]
    assert attached(msgs) == frozenset({0})
    turn = prepare_turn(None, msgs, 400, WORDS)
    assert not any(e.message_id == "a" and e.action == "dropped" and "over budget" in e.reason
                   for e in turn.dropped), turn.dropped


def code(tag: str, n: int) -> str:
    return "".join(f"def {tag}_{i}(x):\n    return x + {i}\n" for i in range(n))


def files_shown(turn) -> tuple[str, int]:
    """The files' message as ``turn`` sends it, and its tokens."""
    st = turn.state
    at = next(i for i, m in enumerate(st.messages) if m.id == "files")
    k = next(k for k, m in enumerate(turn.messages) if m.content.startswith("I have *added"))
    return turn.messages[k].content, st.rewrites[at][1] if at in st.rewrites else st.tokens[at]


def test_a_file_cut_to_its_share_is_not_cut_further_when_a_request_is_a_few_tokens_over():
    """The review probe: a file of 2,000 functions in a budget of 1,200, cut to its share
    (430 tokens) on the first turn; at the fourth the request was a few tokens over after
    its step, and the last resort cut the file to 108 tokens ("middle of long code blocks
    cut to 10+10 lines"), kept so on later turns with 250 to 320 tokens free. The summaries
    give first now; the file (cut by its lines, numbered, to 479 tokens) gives once what is
    over and a tenth of the budget (335 tokens), and keeps that on every later turn."""
    files = {"big.py": code("f", 2000)}
    state, sizes = None, []
    for n in range(1, 8):
        turn = prepare_turn(state, aider_request(n, files), 1200, WORDS)
        state = turn.state
        assert turn.tokens <= 1200
        text, tokens = files_shown(turn)
        sizes.append(tokens)
        assert "def f_0(x)" in text and "def f_1999(x)" in text
        assert any(m.content.startswith(f"QUESTION_{n - 1} ") for m in turn.messages)
    changed = [n for n in range(1, len(sizes)) if sizes[n] != sizes[n - 1]]
    assert len(changed) <= 1 and min(sizes) > 300, sizes


def test_a_file_cut_shorter_than_the_room_allows_grows_back_on_a_later_turn():
    """A window kept with the file over-cut (as the last resort left it before: 430 tokens
    to 108, then 250 to 320 tokens free on every later turn, a window kept across a restart
    still holds it): the first turn with room cuts it again from its original to that room
    but a tenth of the budget left for the next question (106 tokens, then 270), said once,
    and later turns keep that text (the cached prefix moves once)."""
    files = {"big.py": code("f", 2000)}
    state = None
    for n in range(1, 4):
        state = prepare_turn(state, aider_request(n, files), 1200, WORDS).state
    at = next(i for i, m in enumerate(state.messages) if m.id == "files")
    short, after = shorten_message(state.messages[at], state.tokens[at], 108, WORDS)
    entry = state.rewrites[at][2]
    state = dataclasses.replace(state, rewrites={**state.rewrites, at: (
        short.content, after, entry)}, sent=())
    sizes, grew = [], []
    for n in range(4, 9):
        turn = prepare_turn(state, aider_request(n, files), 1200, WORDS)
        state = turn.state
        text, tokens = files_shown(turn)
        assert turn.tokens <= 1200
        assert "def f_0(x)" in text and "def f_1999(x)" in text
        sizes.append(tokens)
        grew += [n for e in turn.truncated if e.message_id == "files" and e.reason == GREW]
    assert len(grew) == 1, (grew, sizes)
    assert min(sizes[grew[0] - 4:]) >= 250, sizes


def test_files_cut_to_fit_leave_room_for_the_next_question():
    """The files gave exactly what was over: with a 600-token question every turn the next
    request was over again and they were cut a little shorter each turn (466, 286, 250, 214
    words), the cached prefix broken at them every time. They give a tenth of the budget
    more: cut once, then the same text turn after turn."""
    files = {f"m{k}.py": code(f"f{k}", 400) for k in range(2)}
    state, shown, asked = None, [], aider_request(0, files)[:-1]
    for n in range(6):
        if n:
            asked.append(Message(role="assistant", id=f"a{n}", content="ok " * 200))
        asked.append(Message(role="user", id=f"q{n}", content=f"QUESTION_{n} why? " + " ".join(
            f"[q{n} row {i}: value {i * 13}]" for i in range(100))))
        request = [*asked, aider_request(0, files)[-1]]  # aider's reminder last
        turn = prepare_turn(state, request, 1200, WORDS)
        state = turn.state
        assert turn.tokens <= 1200
        shown.append(files_shown(turn)[0])
    assert len(set(shown[1:])) == 1, [WORDS.count(t) for t in shown]


@pytest.mark.parametrize("count", [1, 2])
def test_a_file_cut_by_its_ends_says_which_line_ranges_it_keeps(count):
    """Each file cut by its first and last lines names the ranges it keeps, by line number,
    and those are its lines: aider's edit format quotes them, and the model knows what is
    missing. Before, the cut was a bare "[...]"; one file alone (aider's most common case)
    was cut by the text's head and tail, "[... 673 lines omitted ...]"."""
    files = {f"mod{k}.py": "".join(f"def f{k}_{j}(x): return x + {j}\n" for j in range(220))
             for k in range(count)}
    turn = prepare_turn(None, aider_request(1, files), 1500 - 500 * (2 - count), WORDS)
    text = files_shown(turn)[0]
    marks = re.findall(r"\[\.\.\. lines (\d+)-(\d+) cut: lines 1-(\d+) and (\d+)-(\d+) of "
                       r"(\d+) kept \.\.\.\]", text)
    assert len(marks) == count, text
    for k, (cut_from, cut_to, head, resume, last, total) in enumerate(marks):
        assert (int(cut_from), int(resume), last, total) == (int(head) + 1, int(cut_to) + 1,
                                                           "220", "220")
        body = text.split(f"mod{k}.py\n```\n")[1].split("\n```")[0].split("\n")
        lines = files[f"mod{k}.py"].split("\n")
        assert body[:int(head)] == lines[:int(head)]  # lines 1..head, verbatim
        assert body[int(head) + 1:] == lines[int(cut_to):220]  # lines resume..220
        assert lines[int(head)] not in text


@pytest.mark.parametrize("body", [ADDER, code("f", 300)], ids=["whole", "cut"])
def test_a_file_edited_in_place_after_a_restart_gives_the_turn_it_gives_without_one(body):
    """The window kept across a restart (`persist`) is taken up when the only change is a
    file written anew in place, and the turn is the one an unrestarted daemon makes: the same
    summaries, the new contents. Before, `resuming.resume` needed every message up to the
    summarized part to agree, and the chat started afresh."""
    state = None
    for n in range(1, 9):
        state = prepare_turn(state, aider_request(n, {"adder.py": body}), 1200, WORDS).state
    assert state.chunks and any(state.messages[i].id == "files" for i in state.verbatim)
    edited = aider_request(9, {"adder.py": body.replace("return", "return -", 1)})
    live = prepare_turn(state, edited, 1200, WORDS)
    kept = persist.decode(persist.encode(persist.snapshot(state, WORDS.name)))
    resumed = resuming.resume(kept, edited, WORDS, DEFAULT_POLICY)
    assert resumed is not None
    back = prepare_turn(resumed, edited, 1200, WORDS)
    assert [m.content for m in back.messages] == [m.content for m in live.messages]
    assert back.tokens == live.tokens and back.cache_reuse_tokens == live.cache_reuse_tokens
    assert "return -" in files_shown(back)[0]


def guide(label: str) -> str:
    """A markdown file with its own fenced examples (``label``: the language they name)."""
    return "# Guide\n" + "".join(f"## Section {k}\nSome prose about part {k}.\n```{label}\n"
                                 f"x_{k} = {k}\nprint(x_{k})\n```\n" for k in range(40))


@pytest.mark.parametrize("fence,label", [(("```", "```"), "python"),
                                         (("<source>", "</source>"), ""),
                                         (("<source>", "</source>"), "python")],
                         ids=["backticks", "source-tag", "source-tag-named"])
def test_a_markdown_file_with_its_own_fences_is_cut_by_its_own_ends(fence, label):
    """A markdown file the user added holds ``` fences of its own: aider wraps every file in
    <source> tags then (its `choose_fence`), or in ``` around ```python examples. Each file is
    still cut by its own first and last lines, the next file's path and first lines kept.
    Before, the blocks read were the markdown's examples, the text was cut by its head and
    tail, and mod.py's path and its first 135 lines were gone."""
    opening, closing = fence
    msgs = aider_request(1, {"GUIDE.md": "GUIDE", "mod.py": "MOD"})
    at = next(i for i, m in enumerate(msgs) if m.id == "files")
    msgs[at] = Message(role="user", id="files", content=msgs[at].content.replace(
        "\n```\nGUIDE```", f"\n{opening}\n{guide(label)}{closing}").replace(
        "\n```\nMOD```", f"\n{opening}\n{code('g', 150)}{closing}"))
    turn = prepare_turn(None, msgs, 1200, WORDS)
    text = files_shown(turn)[0]
    ranges = re.findall(r"\[\.\.\. lines \d+-\d+ cut: lines 1-\d+ and \d+-(\d+) of (\d+) kept",
                        text)
    assert ranges == [("241", "241"), ("300", "300")], text
    assert f"\nGUIDE.md\n{opening}\n# Guide\n## Section 0\n" in text
    assert f"\nmod.py\n{opening}\ndef g_0(x):\n    return x + 0\n" in text
    assert f"    return x + 149\n{closing}\n" in text
