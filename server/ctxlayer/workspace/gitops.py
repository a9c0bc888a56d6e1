"""An operation git has in progress in a work tree: a rebase, a merge, a cherry-pick, a revert,
`git am`, a bisect.

Owns: reading it from the files git keeps while it lasts, in the work tree's own git folder
(.git, or .git/worktrees/<name> for a linked worktree): rebase-merge/ or rebase-apply/ (their
head-name, onto and step counters), MERGE_HEAD (and MERGE_MSG for the branch's name),
CHERRY_PICK_HEAD, REVERT_HEAD, sequencer/todo (a pick of several), BISECT_LOG. `git status --porcelain` says none of it, and
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
    more: int = 0  # the other heads of an octopus merge
    #: a cherry-pick or revert of several commits whose current one is done (sequencer/todo)
    sequence: bool = False


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
    heads = _lines(git_dir / "MERGE_HEAD")
    if heads:
        return InProgress("merge", _merged(_line(git_dir / "MERGE_MSG") or ""), heads[0],
                          more=len(heads) - 1)
    for name, kind in (("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert")):
        commit = _line(git_dir / name)
        if commit is not None:
            return InProgress(kind, commit=commit)
    todo = _lines(git_dir / "sequencer" / "todo")  # the next of several, the one before done
    if todo and todo[0].split(" ", 1)[0] in ("pick", "p", "revert"):
        verb, _, rest = todo[0].partition(" ")
        return InProgress("revert" if verb == "revert" else "cherry-pick",
                          commit=rest.split(" ", 1)[0] or None, sequence=True)
    if (git_dir / "BISECT_LOG").is_file():
        return InProgress("bisect")
    return None


def _lines(path: Path) -> list[str]:
    """The non-empty lines of a small file of git's, [] when it cannot be read."""
    try:
        text = userfiles.read(path, 65536).decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip()]


def _merged(message: str) -> str | None:
    """What a merge message says is merged: a branch's name ("Merge branch 'feat'"), else its
    own words ("branches 'a' and 'b'", "tag 'v1.0'"), without "into main"."""
    named = _MERGED.match(message)
    if named:
        return named.group(1)
    if message.startswith("Merge "):
        return message.removeprefix("Merge ").split(" into ", 1)[0] or None
    return None
