"""An operation git has in progress in a work tree: a rebase, a merge, a cherry-pick, a revert,
`git am`, a bisect.

Owns: reading it from the files git keeps while it lasts, in the work tree's own git folder
(.git, or .git/worktrees/<name> for a linked worktree): rebase-merge/ or rebase-apply/ (their
head-name, onto and step counters), MERGE_HEAD (and MERGE_MSG for the branch's name),
CHERRY_PICK_HEAD, REVERT_HEAD, BISECT_LOG. `git status --porcelain` says none of it, and
during a rebase HEAD is detached, so the branch being rebased is known only from here. Never
raises: a file it cannot read leaves that detail out. Renders nothing (gitpart.py does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ctxlayer import userfiles

#: the branch a merge message names ("Merge branch 'feat'", "Merge remote-tracking branch ...")
_MERGED = re.compile(r"Merge (?:remote-tracking )?branch '([^']+)'")


@dataclass(frozen=True, slots=True)
class InProgress:
    kind: str  # "rebase", "am", "merge", "cherry-pick", "revert", "bisect"
    branch: str | None = None  # the branch rebased, or the one merged in
    commit: str | None = None  # onto (rebase), the commit merged / picked / reverted
    step: int | None = None  # a rebase's current step, of `steps`
    steps: int | None = None


def _line(path: Path) -> str | None:
    try:
        text = userfiles.read(path, 4096).decode("utf-8", errors="replace")
    except OSError:
        return None
    first = text.strip().split("\n", 1)[0].strip()
    return first or None


def _number(path: Path) -> int | None:
    text = _line(path)
    return int(text) if text is not None and text.isdigit() else None


def _branch(ref: str | None) -> str | None:
    return ref.removeprefix("refs/heads/") if ref and ref != "detached HEAD" else None


def _rebase(git_dir: Path) -> InProgress | None:
    for folder, step, steps in (("rebase-merge", "msgnum", "end"),
                                ("rebase-apply", "next", "last")):
        d = git_dir / folder
        if not d.is_dir():
            continue
        if folder == "rebase-apply" and (d / "applying").exists():
            return InProgress("am", step=_number(d / step), steps=_number(d / steps))
        return InProgress("rebase", _branch(_line(d / "head-name")), _line(d / "onto"),
                          _number(d / step), _number(d / steps))
    return None


def read_in_progress(git_dir: Path) -> InProgress | None:
    """The operation in progress in the work tree whose git folder is `git_dir`, or None."""
    rebase = _rebase(git_dir)
    if rebase is not None:
        return rebase
    merge = _line(git_dir / "MERGE_HEAD")
    if merge is not None:
        named = _MERGED.match(_line(git_dir / "MERGE_MSG") or "")
        return InProgress("merge", named.group(1) if named else None, merge)
    for name, kind in (("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert")):
        commit = _line(git_dir / name)
        if commit is not None:
            return InProgress(kind, commit=commit)
    if (git_dir / "BISECT_LOG").is_file():
        return InProgress("bisect")
    return None
