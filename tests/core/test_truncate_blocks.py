"""Truncating the middle of long code blocks (core/trim/truncate.py), whatever the line ends."""

from __future__ import annotations

import pytest

from ctxlayer.core.trim.truncate import cut_lines, truncate_blocks


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
