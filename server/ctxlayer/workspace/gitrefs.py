"""The repository and its HEAD, read through GitPython from the files in .git: no git process.

Owns: finding the repository that holds the workspace (GitPython's discovery walks up from the
workspace: .git folders and .git files of worktrees and submodules), and reading HEAD (its
commit, the branch it points to, the upstream that branch tracks, from .git/HEAD, the refs and
the config). Status and the file list stay with the git CLI (gitstate.py): GitPython would
run the same processes for them (ARCHITECTURE.md, "Git", has the figures).

GitPython is imported on first use, not at module import: it costs about a tenth of a second,
which the first scan hides behind the git processes it has already started; in a folder with no
`.git` in it or above it (`under_git`) neither GitPython nor git runs at all. Never raises: a
folder that is not in a repository, or a repository GitPython cannot read, gives None.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ctxlayer.workspace.gitstate import Repo


@dataclass(frozen=True, slots=True)
class Head:
    oid: str | None  # None before the first commit
    branch: str | None  # None when detached
    upstream: str | None  # e.g. "origin/main"


def _git():
    # GitPython refuses to import when no git executable is found, unless told to be quiet;
    # a missing git is reported by the status reading instead, with its own message.
    os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")
    import git

    return git


def nearest_dot_git(root: Path) -> Path | None:
    """The nearest `.git` at or above `root` (a folder, or the file of a worktree or
    submodule naming the repository's folder elsewhere), None when there is none."""
    here = Path(os.path.abspath(root))
    return next((p / ".git" for p in (here, *here.parents) if os.path.lexists(p / ".git")),
                None)


def under_git(root: Path) -> bool:
    """Whether `root` or a folder above it holds a `.git`: GitPython's discovery finds a work
    tree only there, so in any other folder neither GitPython (a tenth of a second to import,
    on the first scan) nor git need run."""
    return nearest_dot_git(root) is not None


def nearest_git_is_a_file(root: Path) -> bool:
    """Whether the nearest `.git` is a file, which can point nowhere once that repository
    moved: then no repository is found, though git was meant to be there."""
    dot_git = nearest_dot_git(root)
    return dot_git is not None and dot_git.is_file()


def _open(root: Path):
    if not under_git(root):
        return None
    git = _git()
    try:
        return git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, OSError, ValueError):
        return None


def find_repo(root: Path) -> Repo | None:
    """The repository whose work tree holds `root`, or None (not a repository, a bare one,
    or `root` inside the .git folder)."""
    repo = _open(root)
    if repo is None or repo.working_tree_dir is None:
        return None
    top = Path(os.path.abspath(repo.working_tree_dir))
    git_dir = Path(os.path.abspath(repo.git_dir))
    here = Path(os.path.abspath(root))
    if here == git_dir or git_dir in here.parents:
        return None
    try:
        rel = here.relative_to(top).as_posix()
    except ValueError:
        # `root` reached through a symlink: compare the resolved paths
        try:
            rel = here.resolve().relative_to(top.resolve()).as_posix()
        except ValueError:
            return None
    prefix = "" if rel in ("", ".") else rel + "/"
    common = Path(os.path.abspath(repo.common_dir))
    return Repo(top, git_dir, prefix, None if common == git_dir else common)


def read_head(root: Path) -> Head | None:
    """HEAD of the repository holding `root`, or None when it cannot be read."""
    repo = _open(root)
    if repo is None:
        return None
    try:
        head = repo.head
        try:
            oid: str | None = head.commit.hexsha
        except ValueError:  # an unborn branch: HEAD names a branch with no commit yet
            oid = None
        if head.is_detached:
            return Head(oid, None, None)
        branch = head.reference
        tracking = branch.tracking_branch()
        return Head(oid, branch.name, tracking.name if tracking is not None else None)
    except Exception:  # a ref or config GitPython cannot parse: the CLI will tell
        return None
