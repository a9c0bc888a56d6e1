"""The tree's folders and the selected-file globs on any file list: each folder counts the
files below it and comes in the order its first file does, the calibration sample is the text's
start, and a glob selects exactly the files it matches (the list narrowed by its plain run
first is the same list)."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlayer.workspace import tree
from ctxlayer.workspace.gitpart import render_git
from ctxlayer.workspace.gitstate import Entry, GitState
from ctxlayer.workspace.ignore import compile_globs
from ctxlayer.workspace.selected import select_paths

NAMES = st.sampled_from(["a", "b", "src", "README.md", "x.py", "docs", "ü", "sp ace", ".cursor",
                         "rules", "y.mdc", "readme.txt", "README", "z!", "[q]"])
PATHS = st.lists(st.lists(NAMES, min_size=1, max_size=4).map("/".join), max_size=40)
GLOBS = st.sampled_from(["README*", ".cursor/rules/*.mdc", "**/README*", "src/*.py", "*.md",
                         "a/**/x.py", "[ab]/*", "x[]ab]y*", "\\[q]", "*", "docs/**", "?.py",
                         "sp ace/*", "*/z!", "**/[q]*"])


@settings(max_examples=300, deadline=None)
@given(PATHS)
def test_each_folder_counts_its_files_in_the_order_they_first_come(paths):
    files = sorted(set(paths))
    root, nodes = tree._build(files)
    assert root.total == len(files)
    for node in nodes:
        assert node.total == sum(1 for f in files if f.startswith(node.path))
    first = list(dict.fromkeys(f[:i + 1] for f in files for i, c in enumerate(f) if c == "/"))
    assert [n.path for n in nodes] == first


@settings(max_examples=100, deadline=None)
@given(PATHS, st.integers(min_value=0, max_value=400))
def test_the_calibration_sample_is_the_start_of_the_text(paths, first):
    files = sorted(set(paths))
    root, _ = tree._build(files)
    assert tree._render(root, None, False, first=first) == tree._render(root, None, False)[:first]


@settings(max_examples=300, deadline=None)
@given(PATHS, GLOBS)
def test_a_glob_selects_every_file_it_matches(paths, glob):
    files = sorted(set(paths))
    regex = compile_globs([glob])
    matched = [f for f in files if regex is not None and regex.match(f)]
    chosen, _ = select_paths([glob], files)
    readme = [f for f in matched if f.rsplit("/", 1)[-1].lower().startswith("readme")]
    assert sorted(chosen) == sorted(matched)
    assert chosen[:len(readme)] == sorted(readme, key=lambda p: (p.count("/"), p))


# names a line could misread: a newline made one file two entries, a leading space read as
# indentation, a quote, a tab, an invisible character
ODD = st.sampled_from(["a", "src", "ok.py", "new\nline.py", " lead.txt", "trail ", '"q"', "t\tab",
                       "\u200b", "é", "back\\slash", "cr\r"])


def _entry(line: str) -> str:
    """A tree line's name as written: quoted names read back as Python reads a literal."""
    entry = line.lstrip(" ").removesuffix("/")
    return ast.literal_eval(entry) if entry.startswith('"') else entry


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(ODD, min_size=1, max_size=3).map("/".join), min_size=1, max_size=30))
def test_every_file_and_folder_is_one_line_of_the_tree_and_reads_back(paths):
    files = sorted(set(paths))
    root, nodes = tree._build(files)
    lines = tree._render(root, None, False).split("\n")[1:]
    names = [f.rpartition("/")[2] for f in files] + [n.path[:-1].rpartition("/")[2]
                                                    for n in nodes]
    assert sorted(_entry(line) for line in lines) == sorted(names)


def test_the_git_part_lists_each_odd_path_on_one_line():
    state = GitState(entries=(Entry("new\nline.py", ".M"), Entry(" lead.txt", "A."),
                              Entry("to\tab", "R.", orig="from\nhere"), Entry("ok.py", "??")),
                     untracked=("ok.py", "un\ntracked/x.py"), oid="0" * 40, branch="main")
    text = render_git(state, 10)
    assert text.split("\n")[3:] == [
        "Staged (2):", '  A " lead.txt"', '  R "from\\nhere" -> "to\\tab"',
        "Changed (1):", '  M "new\\nline.py"',
        "Untracked (2):", "  ok.py", '  "un\\ntracked/" (1 file)']


FILES = ["README.md", "docs/a.md", "docs/deep/b.md", "src/x.py", "src/sub/y.py", "[q].txt"]


@pytest.mark.parametrize(("glob", "expected"), [
    # globs ending in `**` matched no file at all: pathspec reads them as "everything below"
    # and its match stops where that starts
    ("**", FILES),
    ("**/*", FILES),
    ("docs/**", ["docs/a.md", "docs/deep/b.md"]),
    ("docs/**/", ["docs/a.md", "docs/deep/b.md"]),
    ("docs/**/*", ["docs/a.md", "docs/deep/b.md"]),
    ("src/**/*.py", ["src/x.py", "src/sub/y.py"]),
    ("docs/*", ["docs/a.md"]),
    ("*", ["README.md", "[q].txt"]),
    ("[[]q].txt", ["[q].txt"]),
])
def test_a_glob_selects_the_files_a_shell_glob_names(glob, expected):
    chosen, _ = select_paths([glob], FILES)
    assert sorted(chosen) == sorted(expected)


def test_a_bracket_class_that_opens_with_a_bracket_prints_no_python_warning():
    """`[[]` (a literal `[`, as git reads it) printed Python's "FutureWarning: Possible nested
    set" with pathspec's file and line on the CLI's stderr."""
    code = ("from ctxlayer.workspace.ignore import compile_globs, parse_rules\n"
            "assert compile_globs(['sub/[[]a].txt']).match('sub/[a].txt')\n"
            "assert parse_rules('[[]b].log\\n')\n")
    done = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
