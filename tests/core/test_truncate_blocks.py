"""Truncating the middle of long code blocks (core/trim/truncate.py), whatever the line ends."""

from __future__ import annotations

import re

import pytest

from ctxlayer.core.compress.shorten import blocks_least, shorten_message
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.core.trim.truncate import cut_lines, truncate_blocks
from ctxlayer.protocol import Message


@pytest.mark.parametrize("nl", ["\n", "\r\n"])
def test_each_block_closes_at_its_fence_with_either_line_end(nl):
    """A CRLF text's closing fence is "```\\r": it closed nothing, the first block ran to the
    end of the text, and the prose between blocks and the next file's name were cut with its
    middle."""
    block = nl.join(f"line {k} of the file" for k in range(40))
    text = nl.join(["a.py", "```", block, "```", "NOTE: between the files", "b.py", "```",
                    block, "```", "the question?"])
    out = truncate_blocks(text, 3, 3)
    assert out is not None
    lines = out.split(nl)
    assert "NOTE: between the files" in lines and "b.py" in lines
    assert lines.count("[...]") == 2 and lines[-1] == "the question?"


@pytest.mark.parametrize("case", ["stray-python", "lone-pre", "code-closed-mid-line"])
def test_prose_between_blocks_of_a_chat_is_never_cut_as_code(case):
    """Only a file's block (under its path, as aider sends files) pairs the ```python fences
    inside it and closes at a tag. In a chat's own text, a ``` block holding a stray
    ```python line closed at the next block's opening fence, and a lone <pre> or <code> line
    of pasted HTML opened a block to the text's end: the prose after it was cut as code
    (the review probe: 12 and 20 of 40 prose lines gone)."""
    prose = [f"prose line {k} says something" for k in range(30)]
    code = [f"x{k} = {k}" for k in range(30)]
    if case == "stray-python":
        lines = ["```", *code[:10], "```python", *code[10:], "```", *prose, "```", *code, "```"]
    elif case == "lone-pre":
        lines = ["Here is the page:", "<pre>", *prose]
    else:
        lines = ["<code>", *code[:3], "end</code>", *prose]
    out = truncate_blocks("\n".join(lines), head=3, tail=3) or "\n".join(lines)
    assert all(p in out.split("\n") for p in prose), case


def test_a_block_cut_before_and_cut_again_names_the_lines_of_its_file():
    """A file cut to its ends with its line ranges named, cut again shorter (the trim engine
    cutting aider's files after prepare cut them to their share): the new cut names the
    file's lines, its kept last lines verbatim. Before, it counted the lines of the text it
    was given: "lines 11-49 cut: lines 1-10 and 50-59 of 59 kept" for a file of 2,000 lines
    whose last lines kept were 1,991-2,000."""
    file = [f"line {k}" for k in range(1, 2001)]
    text = "big.py\n```\n" + "\n".join(file) + "\n```\n"
    once = truncate_blocks(text, 30, 30, numbered=True)
    assert "[... lines 31-1970 cut: lines 1-30 and 1971-2000 of 2000 kept ...]" in once
    again = truncate_blocks(once, 10, 10, numbered=True)
    assert again == ("big.py\n```\n" + "\n".join(file[:10]) + "\n[... lines 11-1990 cut: lines "
                     "1-10 and 1991-2000 of 2000 kept ...]\n" + "\n".join(file[1990:]) + "\n```\n")
    # a cut that would keep the earlier cut's line in its first lines takes it in instead
    lopsided = truncate_blocks(once, 40, 5, numbered=True)
    assert lopsided == ("big.py\n```\n" + "\n".join(file[:30]) + "\n[... lines 31-1995 cut: "
                        "lines 1-30 and 1996-2000 of 2000 kept ...]\n" + "\n".join(file[1995:])
                        + "\n```\n")


@pytest.mark.parametrize(("head", "tail", "said"), [
    (0, 0, "[... lines 1-200 cut: none of 200 lines kept ...]"),
    (0, 5, "[... lines 1-195 cut: lines 196-200 of 200 kept ...]"),
    (5, 0, "[... lines 6-200 cut: lines 1-5 of 200 kept ...]")])
def test_a_cut_keeping_no_head_or_no_tail_names_only_the_ranges_kept(head, tail, said):
    """`head_lines = 0` / `tail_lines = 0` are valid settings; the marker named empty ranges:
    "lines 1-0 and 201-200 of 200 kept"."""
    code = "```\n" + "\n".join(f"x{i} = {i}" for i in range(1, 201)) + "\n```"
    out = truncate_blocks(code, head, tail, numbered=True)
    assert out is not None
    lines = out.split("\n")
    assert said in lines
    assert len(lines) == 2 + head + 1 + tail  # the fences, the kept lines, the marker
    assert (lines[-2] == "x200 = 200") == (tail > 0)


def test_text_cut_to_no_tail_lines_keeps_none_of_them():
    text = "\n".join(f"line {i}" for i in range(1, 41))
    assert cut_lines(text, 2, 0).split("\n") == ["line 1", "line 2", "[... 38 lines omitted ...]"]


def _file(tag: str, n: int) -> str:
    return "".join(f"{tag}_line_{k} = compute({k})\n" for k in range(1, n + 1))


def test_a_file_without_a_final_newline_closes_at_the_fence_on_its_last_line():
    """aider writes a file's closing fence right after its text (`prompt += content;
    prompt += fence[1]`): a file with no final newline ends "line 60```". Only a bare fence
    closed a block, so the first file ran on to the next file's opening fence ("58-62 of 62"
    for 60 lines, the blank and the path counted as its lines) and the next file was read as
    prose, never cut. Its last line is the file's, counted and kept."""
    first = "\n".join(f"line {k}" for k in range(1, 61))
    second = "\n".join(f"line {k}" for k in range(1, 61)) + "\n"
    text = f"a.py\n```\n{first}```\n\nb.py\n```\n{second}```\n"
    out = truncate_blocks(text, 5, 5, numbered=True)
    head = "\n".join(f"line {k}" for k in range(1, 6))
    tail = "\n".join(f"line {k}" for k in range(56, 61))
    cut = "[... lines 6-55 cut: lines 1-5 and 56-60 of 60 kept ...]"
    assert out == (f"a.py\n```\n{head}\n{cut}\n{tail}```\n\nb.py\n```\n{head}\n{cut}\n{tail}\n"
                   "```\n")
    # cut again, it keeps counting the file's 60 lines; cut to no last line, the fence stays
    again = truncate_blocks(out, 2, 2, numbered=True)
    assert again.startswith("a.py\n```\nline 1\nline 2\n[... lines 3-58 cut: lines 1-2 and "
                            "59-60 of 60 kept ...]\nline 59\nline 60```\n\nb.py\n")
    bare = truncate_blocks(text, 5, 0, numbered=True)
    assert bare.startswith(f"a.py\n```\n{head}\n[... lines 6-60 cut: lines 1-5 of 60 kept ...]"
                           "\n```\n\nb.py\n")


def test_a_chat_block_is_not_closed_by_a_line_ending_with_a_fence():
    """Only a file's block (under its path) closes on its last line: a chat's own block
    reads as CommonMark reads it, closed by a bare fence alone."""
    code = [f"x{k} = {k}" for k in range(20)]
    text = "\n".join(["Look:", "```", *code[:10], "say ```", "", *code[10:], "```", "done"])
    out = truncate_blocks(text, 2, 2)
    assert out.split("\n")[:4] == ["Look:", "```", "x0 = 0", "x1 = 1"]
    assert "say ```" not in out and out.split("\n")[-2:] == ["```", "done"]


@pytest.mark.parametrize("nl", ["\n", "\r\n"])
def test_a_tag_fenced_file_without_a_final_newline_counts_its_last_line(nl):
    """aider's <source> file with no final newline ends "line 59</source>": that line was
    left out of the block's lines, so the cut said "49-58 of 58 kept" and showed 49 to 59."""
    body = nl.join(f"line {k}" for k in range(1, 60))
    text = f"README.md{nl}<source>{nl}{body}</source>{nl}{nl}q"
    out = truncate_blocks(text, 10, 10, numbered=True)
    kept = nl.join([*(f"line {k}" for k in range(1, 11)),
                    "[... lines 11-49 cut: lines 1-10 and 50-59 of 59 kept ...]",
                    *(f"line {k}" for k in range(50, 60))])
    assert out == f"README.md{nl}<source>{nl}{kept}</source>{nl}{nl}q"


@pytest.mark.parametrize("cap", [800, 400])
def test_aider_files_one_without_a_final_newline_each_keep_their_ends(cap):
    """Three files aider's user added, the first with no final newline, cut to a cap as
    `give_over` cuts them: the first block ran on to the next file's fence, so the least the
    files could be cut to was 1,236 of 1,812 tokens (103 with a final newline), and at 800
    or 400 the text was cut by its own head and tail: src/beta.py was lost entirely."""
    files = [("src/alpha.py", _file("alpha", 200).rstrip("\n")),
             ("src/beta.py", _file("beta", 200)), ("src/gamma.py", _file("gamma", 200))]
    text = "".join(f"\n{p}\n```\n{c}```\n" for p, c in files) + "\nPlease refactor all three."
    words = WordTokenizer()
    assert blocks_least(text, words) < 200
    short, _ = shorten_message(Message(role="user", content=text), words.count(text), cap, words)
    lines = short.content.split("\n")
    for path, _ in files:
        tag = path[4:-3]
        at = lines.index(path)
        assert lines[at + 1 : at + 3] == ["```", f"{tag}_line_1 = compute(1)"]
        last = f"{tag}_line_200 = compute(200)"
        end = next(k for k in range(at + 2, len(lines)) if lines[k].endswith("```"))
        if tag == "alpha":  # its fence on its last line, as aider wrote it
            assert lines[end] == last + "```"
        else:
            assert lines[end - 1 : end + 1] == [last, "```"]
        shown = lines[at + 2 : end + 1]
        cut = [k for k, x in enumerate(shown) if x.startswith("[... lines ")]
        assert len(cut) == 1, path
        ranges = re.fullmatch(r"\[\.\.\. lines \d+-\d+ cut: lines 1-(\d+) and (\d+)-200 of 200 "
                              r"kept \.\.\.\]", shown[cut[0]])
        assert ranges is not None, shown[cut[0]]
        assert int(ranges.group(1)) == cut[0] and 200 - int(ranges.group(2)) + 1 == (
            len(shown) - cut[0] - 1 - (tag != "alpha"))
        assert shown[cut[0] + 1] == f"{tag}_line_{ranges.group(2)} = compute({ranges.group(2)})"
    assert lines[-1] == "Please refactor all three."


def test_a_file_whose_last_line_starts_with_a_backtick_closes_there_too():
    """Only a line starting with the fence itself is a fence line: a markdown file's last
    line "`make` builds it" + the fence is the file's last line."""
    body = "\n".join(f"line {k}" for k in range(1, 30)) + "\n`make` builds it"
    text = f"NOTES.md\n```\n{body}```\n\nb.py\n```\n{body}\n```\n"
    out = truncate_blocks(text, 2, 2, numbered=True)
    assert out == ("NOTES.md\n```\nline 1\nline 2\n[... lines 3-28 cut: lines 1-2 and 29-30 of 30 "
                   "kept ...]\nline 29\n`make` builds it```\n\nb.py\n```\nline 1\nline 2\n[... "
                   "lines 3-28 cut: lines 1-2 and 29-30 of 30 kept ...]\nline 29\n`make` builds "
                   "it\n```\n")
