"""Our gitignore matcher agrees with git itself (`git ls-files -o --exclude-standard`)."""

from __future__ import annotations

import re
from pathlib import Path

from ws_helpers import git, write

from ctxlayer.workspace import filelist
from ctxlayer.workspace.ignore import compile_globs, glob_regex

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
    ours, complete = filelist.walk(root, [])
    git(root, "init", "-q")
    theirs = sorted(git(root, "ls-files", "-o", "--exclude-standard").splitlines())
    assert complete
    assert ours == theirs
    assert "keep.log" in ours and "app.log" not in ours and "logs/keep.me" not in ours


def test_extra_ignore_patterns_apply_on_top(tmp_path: Path):
    root = tmp_path / "w"
    for rel in ("a/gen/x.py", "a/b.py", "c.py", "gen/y.py"):
        write(root, rel)
    files, _ = filelist.walk(root, ["gen/", "/c.py"])
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
