"""The tree's folders and the selected-file globs on any file list: each folder counts the
files below it and comes in the order its first file does, the calibration sample is the text's
start, and a glob selects exactly the files it matches (the list narrowed by its plain run
first is the same list)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlayer.workspace import tree
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
