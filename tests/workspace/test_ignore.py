"""Our gitignore matcher agrees with git itself (`git ls-files -o --exclude-standard`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ws_helpers import git, write

from ctxlayer.workspace import filelist
from ctxlayer.workspace.ignore import IgnoreRules, compile_globs, glob_regex, parse_rules

ROOT_RULES = """\
# comment
*.log
!keep.log
build/
/only_root.txt
docs/**/*.tmp
**/cache
a?c.txt
[Tt]emp*
dir_only/
nested/deep/x.txt
\\#hash.txt
trailing.txt   
*.o
!important.o
logs/
!logs/keep.me
"""
NESTED_RULES = "*.md\n!README.md\n/local.txt\nsub/\n"
FILES = [
    "app.log", "keep.log", "sub/app.log", "build/out.js", "src/build/x", "only_root.txt",
    "src/only_root.txt", "docs/a.tmp", "docs/x/y/b.tmp", "docs/c.txt", "x/cache/f", "cache/g",
    "abc.txt", "a/abc.txt", "aXc.txt", "abbc.txt", "Temp1", "temp2", "tEmp", "src/dir_only",
    "other/dir_only/f", "nested/deep/x.txt", "nested/deep/y.txt", "#hash.txt", "trailing.txt",
    "z.o", "important.o", "logs/keep.me", "logs/a", "nested/a.md", "nested/README.md",
    "nested/local.txt", "nested/q/local.txt", "nested/sub/f", "nested/q/sub/f", "plain.txt",
]


def test_walk_matches_git(tmp_path: Path):
    root = tmp_path / "w"
    for rel in FILES:
        write(root, rel)
    write(root, ".gitignore", ROOT_RULES)
    write(root, "nested/.gitignore", NESTED_RULES)
    ours, complete, _ = filelist.walk(root, [])
    git(root, "init", "-q")
    theirs = sorted(git(root, "ls-files", "-o", "--exclude-standard").splitlines())
    assert complete
    assert ours == theirs
    assert "keep.log" in ours and "app.log" not in ours and "logs/keep.me" not in ours


def test_extra_ignore_patterns_apply_on_top(tmp_path: Path):
    root = tmp_path / "w"
    for rel in ("a/gen/x.py", "a/b.py", "c.py", "gen/y.py"):
        write(root, rel)
    files, _, _ = filelist.walk(root, ["gen/", "/c.py"])
    assert files == ["a/b.py"]


def test_glob_regex():
    rx = compile_globs(["README*", ".cursor/rules/*.mdc", "docker-compose.y*ml", "**/*.cfg"])
    assert rx is not None
    for path in ("README.md", ".cursor/rules/a.mdc", "docker-compose.yaml",
                 "docker-compose.yml", "x.cfg", "a/b/x.cfg"):
        assert rx.match(path), path
    for path in ("docs/README.md", ".cursor/rules/x/a.mdc", "READM"):
        assert not rx.match(path), path
    assert re.fullmatch(glob_regex("a/**/b"), "a/b") and re.fullmatch(glob_regex("a/**/b"),
                                                                       "a/x/y/b")
    assert not re.fullmatch(glob_regex("[!a]x"), "ax") and re.fullmatch(glob_regex("[!a]x"), "bx")


# The cases of git's own gitignore documentation (PATTERN FORMAT and EXAMPLES), one file set
# each: (rules, files ignored, files kept). Every case is also checked against git itself.
DOCUMENTED = {
    "negation re-includes": ("*.o\n!keep.o\n", ["a.o", "d/b.o"], ["keep.o", "d/keep.o"]),
    "no re-include below an excluded folder": (
        "out/\n!out/keep.txt\n", ["out/keep.txt", "out/x"], ["outside.txt"]),
    "everything but foo/bar": (
        "/*\n!/foo\n/foo/*\n!/foo/bar\n", ["top.txt", "foo/other/f", "foo/f"],
        ["foo/bar/f"]),
    "trailing slash: folders only": ("frotz/\n", ["frotz/f", "a/frotz/f"], ["b/frotz"]),
    "leading slash anchors": ("/*.c\n", ["cat-file.c"], ["mozilla-sha1/sha1.c"]),
    "a slash in the middle anchors": ("doc/frotz/\n", ["doc/frotz/f"], ["a/doc/frotz/f"]),
    "leading **/": ("**/foo\n**/baz/bar\n", ["foo", "x/foo", "x/y/foo/f", "baz/bar",
                                              "q/baz/bar"], ["x/bar", "baz/x/bar"]),
    "trailing /**": ("abc/**\n", ["abc/f", "abc/x/y"], ["abc.txt", "x/abc/f"]),
    "** in the middle": ("a/**/b\n", ["a/b", "a/x/b", "a/x/y/b"], ["a/bb", "x/a/b"]),
    "escaped # and !": ("\\#file\n\\!important!.txt\n", ["#file", "!important!.txt"],
                        ["file", "important!.txt"]),
    "a comment is no pattern": ("#file\n", [], ["#file", "file"]),
    "trailing spaces dropped unless escaped": (
        "spaced   \nkept\\ \n", ["spaced", "kept "], ["kept", "spaced "]),
    "* and ? stay in one name": ("doc/*.txt\nq?.md\n", ["doc/a.txt", "qa.md", "x/qb.md"],
                                  ["doc/sub/b.txt", "q.md", "qab.md"]),
    "ranges": ("[a-c]x\n[!a]y\n", ["ax", "cx", "by"], ["dx", "ay"]),
}


@pytest.mark.parametrize("case", sorted(DOCUMENTED))
def test_documented_gitignore_cases(tmp_path: Path, case: str):
    rules_text, ignored, kept = DOCUMENTED[case]
    root = tmp_path / "w"
    for rel in ignored + kept:
        write(root, rel)
    write(root, ".gitignore", rules_text)
    ours, _, _ = filelist.walk(root, [])
    git(root, "init", "-q")
    theirs = sorted(git(root, "ls-files", "-o", "--exclude-standard").splitlines())
    assert ours == theirs
    for rel in ignored:
        assert rel not in ours, rel
    for rel in kept:
        assert rel in ours, rel


def test_folder_rules_are_relative_to_their_folder():
    rules = IgnoreRules()
    rules.add("", parse_rules("*.log\n"))
    rules.add("sub", parse_rules("!keep.log\n/local\n"))
    assert rules.ignored("a.log", False) and rules.ignored("x/a.log", False)
    assert not rules.ignored("sub/keep.log", False) and rules.ignored("keep.log", False)
    assert rules.ignored("sub/local", False) and not rules.ignored("sub/x/local", False)
    assert rules.ignored_with_parents("build/x", False) is False
    rules.add("", parse_rules("build/\n"))
    assert rules.ignored_with_parents("build/x", False) and rules.ignored("build", True)
    assert not rules.ignored("build", False)  # `build/` names folders only


def test_dir_starstar_holds_what_is_inside_not_the_folder(tmp_path: Path):
    """git's `sub/**` matches what is inside sub, never sub itself, so a `!keep.txt` in
    sub/.gitignore brings that file back; the walk took sub/ for ignored and never went in."""
    root = tmp_path / "w"
    write(root, ".gitignore", "sub/**\n")
    write(root, "sub/.gitignore", "!keep.txt\n")
    for rel in ("sub/keep.txt", "sub/drop.txt", "sub/in/keep.txt", "top.txt"):
        write(root, rel)
    ours, _, _ = filelist.walk(root, [])
    git(root, "init", "-q")
    theirs = sorted(git(root, "ls-files", "-o", "--exclude-standard").splitlines())
    assert ours == theirs
    assert "sub/keep.txt" in ours and "sub/drop.txt" not in ours
