"""The workspace in the states git can be in beyond a clean checkout: a merge with conflicts,
a sparse checkout, an operation in progress, submodules, a worktree whose repository moved.
Each on a real repository: the tree lists what is on disk and the git part says the state."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ws_helpers import GIT_ENV, Recorder, git, make_ws, part, write


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
    _git_may_fail(root, "merge", "-q", "other")


def _git_may_fail(root: Path, *args: str) -> None:
    """git stopping on a conflict (exit status 1), as the test means it to."""
    subprocess.run(["git", *args], cwd=root, capture_output=True, check=False,
                   env={**os.environ, **GIT_ENV, "GIT_EDITOR": "true"})


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


def _diverged(repo: Path) -> str:
    """Branch feat and main each changing README.md; the short id of main."""
    git(repo, "checkout", "-qb", "feat")
    write(repo, "README.md", "feat\n")
    git(repo, "commit", "-qam", "feat")
    git(repo, "checkout", "-q", "main")
    write(repo, "README.md", "main\n")
    git(repo, "commit", "-qam", "main")
    return git(repo, "rev-parse", "--short=7", "main").strip()


def test_a_rebase_in_progress_is_said_and_followed_live(repo, home):
    """During a rebase HEAD is detached and status says nothing of it: the part read
    'Branch: (detached HEAD)' with no word of the rebase."""
    onto = _diverged(repo)
    git(repo, "checkout", "-q", "feat")
    ws = make_ws(repo, home)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)

    def says(*texts, present=True):
        return lambda c: bool(c) and all((t in part(c[-1][0], "git").text) == present
                                         for t in texts)
    try:
        _git_may_fail(repo, "rebase", "main")
        rec.wait_for(says("Branch: feat (being rebased: HEAD detached)",
                          f"Rebasing feat onto {onto}, step 1 of 1 (conflicts to fix)"))
        write(repo, "README.md", "both\n")
        git(repo, "add", "README.md")
        rec.wait_for(says("(all conflicts fixed: git rebase --continue)"))
        _git_may_fail(repo, "rebase", "--continue")
        rec.wait_for(says("Branch: feat\n"))
        rec.wait_for(says("Rebasing", present=False))
    finally:
        ws.stop()


def test_a_merge_and_a_cherry_pick_in_progress_are_said(repo, home):
    _diverged(repo)
    feat = git(repo, "rev-parse", "--short=7", "feat").strip()
    _git_may_fail(repo, "merge", "feat")
    text = part(make_ws(repo, home).scan(), "git").text
    assert f"Merging feat at {feat} (conflicts to fix)" in text
    write(repo, "README.md", "both\n")
    git(repo, "add", "README.md")
    text = part(make_ws(repo, home).scan(), "git").text
    assert f"Merging feat at {feat} (all conflicts fixed: commit to finish)" in text
    git(repo, "merge", "--abort")
    _git_may_fail(repo, "cherry-pick", "feat")
    text = part(make_ws(repo, home).scan(), "git").text
    assert f"Cherry-picking {feat} (conflicts to fix)" in text
    git(repo, "cherry-pick", "--abort")
    assert "Cherry-picking" not in part(make_ws(repo, home).scan(), "git").text


def test_a_stopped_am_a_sequence_of_picks_and_an_octopus_merge_are_said_as_git_says(
        repo, home):
    """A `git am` stopped on a patch that does not apply read "all conflicts fixed: git am
    --continue" (which fails there); the rest of a several-commit cherry-pick after the first
    was committed by hand was not said; an octopus merge showed one of its heads."""
    _diverged(repo)
    patch = git(repo, "format-patch", "-1", "--stdout", "feat")
    (repo.parent / "feat.patch").write_text(patch)
    _git_may_fail(repo, "am", str(repo.parent / "feat.patch"))
    text = part(make_ws(repo, home).scan(), "git").text
    assert "Applying patches (git am)" in text and "stopped on a patch" in text
    assert "all conflicts fixed" not in text
    git(repo, "am", "--abort")
    git(repo, "checkout", "-q", "feat")
    for k in (1, 2):
        write(repo, "README.md", f"feat {k}\n")
        git(repo, "commit", "-qam", f"feat {k}")
    git(repo, "checkout", "-q", "main")
    _git_may_fail(repo, "cherry-pick", "feat~1", "feat")  # stops on the first
    write(repo, "README.md", "both\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-qm", "picked by hand")
    text = part(make_ws(repo, home).scan(), "git").text
    assert "Cherry-picking" in text and "more commits to go: git cherry-pick --continue" in text
    git(repo, "cherry-pick", "--abort")
    for name in ("a", "b"):
        git(repo, "checkout", "-qb", name, "main")
        write(repo, f"{name}.txt", f"{name}\n")
        git(repo, "add", f"{name}.txt")
        git(repo, "commit", "-qm", name)
    git(repo, "checkout", "-q", "main")
    _git_may_fail(repo, "merge", "--no-commit", "a", "b")
    text = part(make_ws(repo, home).scan(), "git").text
    assert "Merging branches 'a' and 'b' at " in text and " and 1 more" in text


def test_a_submodule_says_whether_its_commit_or_only_its_files_changed(repo, home, tmp_path):
    """Porcelain v2's submodule field was ignored: a scratch file inside vendor/lib read
    'M vendor/lib', the same as a new commit there."""
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    write(lib, "x.py", "x\n")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "x")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib),
        "vendor/lib")
    git(repo, "commit", "-qm", "sub")
    write(repo, "vendor/lib/scratch.txt", "u\n")
    text = part(make_ws(repo, home).scan(), "git").text
    assert "  M vendor/lib (untracked content)" in text
    write(repo, "vendor/lib/x.py", "edited\n")
    text = part(make_ws(repo, home).scan(), "git").text
    assert "  M vendor/lib (modified content, untracked content)" in text
    git(repo / "vendor/lib", "add", "-A")
    git(repo / "vendor/lib", "commit", "-qm", "new")
    text = part(make_ws(repo, home).scan(), "git").text
    assert "  M vendor/lib (new commits)\n" in text + "\n"


def test_a_file_named_like_markdown_structure_is_quoted(repo, home):
    """Root files named '# Git' or '```' printed as a second '# Git' section and an open code
    fence that swallowed the real git part: such names are quoted as odd names are."""
    names = ["# Git", "## AGENTS.md", "```", "~~~", "---", "> quote", "<!-- c"]
    for name in names:
        write(repo, name, "x\n")
    git(repo, "add", "-A")
    seg = make_ws(repo, home, files=[]).scan()
    lines = seg.text.splitlines()
    assert [ln for ln in lines if ln.startswith("#")] == [
        "# Project tree (11 files)", "# Git"]
    tree_text = part(seg, "tree").text
    assert all(f'"{name}"' in tree_text for name in names)
    assert all(f'A "{name}"' in part(seg, "git").text for name in names)


def test_an_uninitialized_submodule_has_no_files_and_no_foreign_status(repo, home, tmp_path):
    """The empty folder of a submodule not checked out: ls-files lists the folder itself as
    './', which the tree showed as './' holding a file with an empty name, and the git part
    presented the superproject's branch and HEAD as the workspace's own."""
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    write(lib, "x.py", "x\n")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "x")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib),
        "vendor/lib")
    git(repo, "commit", "-qm", "sub")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    ws_root = clone / "vendor" / "lib"
    assert ws_root.is_dir() and not any(ws_root.iterdir())
    seg = make_ws(ws_root, home).scan()
    assert part(seg, "tree").text == "# Project tree (no files)"
    git_text = part(seg, "git").text
    assert "Branch:" not in git_text and "HEAD:" not in git_text
    assert f"an uninitialized submodule of the repository at {clone}" in git_text
    assert [(item.part, item.path) for item in seg.left_out] == [("git", ".")]
    assert "uninitialized submodule" in seg.left_out[0].reason


def test_a_worktree_whose_repository_moved_says_git_could_not_be_read(repo, home, tmp_path):
    """The .git file of a linked worktree names a folder that moved away: no repository was
    found, so the git part vanished and leftOut was empty, with nothing saying why."""
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    write(linked, "secret.log", "x\n")
    repo.rename(tmp_path / "moved")
    seg = make_ws(linked, home).scan()
    reasons = [(item.part, item.reason) for item in seg.left_out]
    assert len(reasons) == 1 and reasons[0][0] == "git"
    assert "not a git repository" in reasons[0][1]
    assert "not a git repository" in part(seg, "git").text
    tree_text = part(seg, "tree").text
    assert "src/" in tree_text and "secret.log" not in tree_text  # .gitignore still read
