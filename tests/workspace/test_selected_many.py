"""A `files` glob that matches far more than the budget holds. Each match was resolved, and
read when under 4 x what was left + 4 KB, and named in leftOut: 20,000 matches took 10 s to
the first segment, 20,001 leftOut entries (a 2.5 MB segment response) and 3.5 s a save."""

from __future__ import annotations

from ws_helpers import make_ws, part, write

from ctxlayer import userfiles
from ctxlayer.workspace import selected
from ctxlayer.workspace.tree import MAX_LEFT_OUT

LINE = "x = 1\n"  # 6 characters


def _files_left_out(seg):
    return [lo for lo in seg.left_out or [] if lo.part == "files"]


def test_matches_past_the_budget_are_not_read_and_counted_past_the_cap(repo, home,
                                                                       monkeypatch):
    for i in range(120):
        write(repo, f"gen/f{i:03}.py", LINE * 200)  # 1,200 characters each
    write(repo, "gen/zz_tiny.py", "t = 1\n")  # last in the order, small enough to fit
    reads = []
    read = userfiles.read
    monkeypatch.setattr(selected.userfiles, "read",
                        lambda p, *a, **k: reads.append(p) or read(p, *a, **k))

    seg = make_ws(repo, home, files=["gen/*.py"], files_char_budget=2500).scan()

    text = part(seg, "files").text
    assert "## gen/f000.py" in text and "## gen/f001.py" in text  # 2,400 of 2,500
    assert "## gen/zz_tiny.py" in text  # what is left still takes a small file
    # read: the two that fit and the one that fits after them; 118 told by their size
    assert sorted(p.name for p in reads if p.parent.name == "gen") == [
        "f000.py", "f001.py", "zz_tiny.py"]
    left = _files_left_out(seg)
    assert len(left) == MAX_LEFT_OUT + 1
    assert [lo.path for lo in left[:MAX_LEFT_OUT]] == [
        f"gen/f{i:03}.py" for i in range(2, 2 + MAX_LEFT_OUT)]  # in the selection's order
    assert all("over the character budget" in lo.reason for lo in left[:MAX_LEFT_OUT])
    assert left[-1].path == "."
    assert left[-1].reason == "68 more selected files left out: 68 over the character budget"


def test_a_file_the_size_says_is_over_is_not_read_but_multibyte_text_that_fits_is(repo, home):
    """Bytes over 4 x the characters left can never fit; fewer may, when the text is not
    ASCII: such a file is still read, and taken when its characters fit."""
    write(repo, "a.md", "é" * 100)  # 200 bytes, 100 characters
    write(repo, "b.md", "z" * 1000)
    seg = make_ws(repo, home, files=["a.md", "b.md"], files_char_budget=120).scan()
    assert "## a.md" in part(seg, "files").text
    (b,) = [lo for lo in _files_left_out(seg) if lo.path == "b.md"]
    assert b.reason == "over the character budget (1,000 bytes, 20 characters left)"


def test_few_left_out_are_all_named(repo, home):
    for i in range(MAX_LEFT_OUT):
        write(repo, f"gen/f{i:03}.py", LINE * 200)
    seg = make_ws(repo, home, files=["gen/*.py"], files_char_budget=1300).scan()
    left = _files_left_out(seg)
    assert len(left) == MAX_LEFT_OUT - 1 and all(lo.path != "." for lo in left)


def test_a_count_of_one_reads_in_the_singular(repo, home):
    """`ctxlayer inspect` said "(13 bytes, 1 characters left)"."""
    write(repo, "a.md", "a")
    write(repo, "b.md", "z" * 13)
    write(repo, "c.md", "c")
    seg = make_ws(repo, home, files=["a.md", "b.md"], files_char_budget=2).scan()
    (b,) = _files_left_out(seg)
    assert b.reason == "over the character budget (13 bytes, 1 character left)"
    seg = make_ws(repo, home, files=["a.md", "c.md"], files_char_budget=1).scan()
    (c,) = _files_left_out(seg)
    assert c.reason == "over the character budget (1 byte, 0 characters left)"
