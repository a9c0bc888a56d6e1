"""The workspace in the states git can be in beyond a clean checkout: a merge with conflicts,
a sparse checkout, an operation in progress, submodules, a worktree whose repository moved.
Each on a real repository: the tree lists what is on disk and the git part says the state."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ws_helpers import GIT_ENV, git, make_ws, part, write


def _on_disk(root: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        rel = os.path.relpath(folder, root)
        found += [f if rel == "." else f"{rel}/{f}" for f in files if f != ".git"]
    return sorted(found)


def _tree_files(seg) -> list[str]:
    """The files of an unfolded tree part, read back from its indented lines."""
    files, folders = [], []
    for line in part(seg, "tree").text.splitlines()[1:]:
        depth = (len(line) - len(line.lstrip(" "))) // 2
        name = line.strip()
        del folders[depth:]
        if name.endswith("/"):
            folders.append(name)
        elif name:
            files.append("".join(folders) + name)
    return sorted(files)


def _conflicted_merge(root: Path) -> None:
    """A merge leaving every unmerged code porcelain v2 has: AA DU UD UU, and a rename to two
    names (x -> y here, x -> z there) for DD x, AU y, UA z."""
    for name in ("uu", "ud", "du", "x"):
        write(root, name, f"base {name}\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    git(root, "checkout", "-qb", "other")
    for name in ("uu", "du", "aa"):
        write(root, name, "theirs\n")
    git(root, "rm", "-q", "ud")
    git(root, "mv", "x", "z")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "other")
    git(root, "checkout", "-q", "main")
    for name in ("uu", "ud", "aa"):
        write(root, name, "ours\n")
    git(root, "rm", "-q", "du")
    git(root, "mv", "x", "y")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "main")
    _merge_may_fail(root, "other")


def _merge_may_fail(root: Path, branch: str) -> None:
    subprocess.run(["git", "merge", "-q", branch], cwd=root, capture_output=True,
                   env={**os.environ, **GIT_ENV}, check=False)


def test_every_conflicted_file_on_disk_is_in_the_tree(home, tmp_path):
    """'deleted by them' (UD) keeps our file on disk, 'deleted by us' (DU) theirs: any D in
    the second letter was taken for a deleted file, and the tree dropped them."""
    root = tmp_path / "merge"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    _conflicted_merge(root)
    codes = {line[3:]: line[:2] for line in git(root, "status", "--short").splitlines()}
    assert codes == {"aa": "AA", "du": "DU", "ud": "UD", "uu": "UU", "x": "DD", "y": "AU",
                     "z": "UA"}
    seg = make_ws(root, home).scan()
    assert _tree_files(seg) == _on_disk(root) == ["aa", "du", "ud", "uu", "y", "z"]
    text = part(seg, "git").text
    assert all(f"{xy} {name}" in text for name, xy in codes.items())


def test_a_sparse_checkout_lists_only_the_files_on_disk(repo, home):
    """`git ls-files -c` lists skip-worktree entries too: the tree showed docs/ a sparse
    checkout had left out. A file marked skip-worktree by hand stays on disk and listed."""
    write(repo, "docs/guide.md", "d\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "docs")
    git(repo, "sparse-checkout", "set", "src")
    assert not (repo / "docs").exists() and "S docs/guide.md" in git(repo, "ls-files", "-t")
    seg = make_ws(repo, home).scan()
    assert _tree_files(seg) == _on_disk(repo)
    assert "docs/" not in part(seg, "tree").text
    git(repo, "sparse-checkout", "disable")
    git(repo, "update-index", "--skip-worktree", "src/util.py")
    assert "S src/util.py" in git(repo, "ls-files", "-t")
    seg = make_ws(repo, home).scan()
    assert _tree_files(seg) == _on_disk(repo)
    assert "util.py" in part(seg, "tree").text
