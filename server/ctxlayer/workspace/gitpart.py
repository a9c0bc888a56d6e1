"""The `git` part: branch, HEAD, upstream distance, staged / changed / untracked files.

Owns: rendering a `GitState` as short, stable text. Untracked files inside a folder that holds
no tracked file are shown as that folder (`build/ (120 files)`), like `git status` does; each
group lists at most `max_files` paths and counts the rest; a path that would not read as one
entry is quoted (`core.text.path_line`). Pure: no I/O.
"""

from __future__ import annotations

from functools import lru_cache

from ctxlayer.core.text import counted, path_line
from ctxlayer.workspace.gitops import InProgress
from ctxlayer.workspace.gitstate import UNMERGED, GitState

HEADER = "# Git"


@lru_cache(maxsize=2)
def _tracked_dirs(tracked: tuple[str, ...]) -> frozenset[str]:
    dirs: set[str] = set()
    for path in tracked:
        i = path.find("/")
        while i != -1:
            dirs.add(path[: i + 1])
            i = path.find("/", i + 1)
    return frozenset(dirs)


def _untracked_groups(untracked: tuple[str, ...], tracked: tuple[str, ...]) -> list[str]:
    tracked_dirs = _tracked_dirs(tracked)
    groups: dict[str, int] = {}
    for path in untracked:
        key = path
        i = path.find("/")
        while i != -1:
            if path[: i + 1] not in tracked_dirs:
                key = path[: i + 1]
                break
            i = path.find("/", i + 1)
        groups[key] = groups.get(key, 0) + 1
    out = []
    for key in sorted(groups):
        n = groups[key]
        out.append(f"{path_line(key)} ({counted(n, 'file')})" if key.endswith("/")
                   else path_line(key))
    return out


def _group(title: str, items: list[str], max_files: int) -> list[str]:
    if not items:
        return []
    lines = [f"{title} ({len(items):,}):"]
    lines += [f"  {item}" for item in items[:max_files]]
    if len(items) > max_files:
        lines.append(f"  … {len(items) - max_files:,} more")
    return lines


#: what changed in a submodule, by its letter in porcelain v2's 'S<c><m><u>' field
_SUBMODULE = (("C", "new commits"), ("M", "modified content"), ("U", "untracked content"))


def _submodule(sub: str) -> str:
    """' (new commits, untracked content)' for a submodule, as `git status` says it: its
    commit moved, or only the files in it changed, which read the same as 'M vendor/lib'."""
    if not sub.startswith("S"):
        return ""
    said = [words for letter, words in _SUBMODULE if letter in sub[1:]]
    return f" ({', '.join(said)})" if said else ""


#: what finishes each operation once its conflicts are fixed
_CONTINUE = {"rebase": "git rebase --continue", "am": "git am --continue",
             "merge": "commit to finish", "cherry-pick": "git cherry-pick --continue",
             "revert": "git revert --continue"}


def _in_progress(op: InProgress, conflicts: bool) -> str:
    """One line saying the operation, e.g. 'Rebasing feat onto 3c1967a, step 2 of 3
    (conflicts to fix)'."""
    commit = op.commit[:7] if op.commit else "?"
    if op.kind == "rebase":
        line = f"Rebasing {op.branch or '(detached HEAD)'} onto {commit}"
    elif op.kind == "am":
        line = "Applying patches (git am)"
    elif op.kind == "merge":
        line = f"Merging {op.branch} at {commit}" if op.branch else f"Merging {commit}"
        if op.more:  # an octopus merge: one head a branch
            line += f" and {op.more} more"
    elif op.kind == "cherry-pick":
        line = f"Cherry-picking {commit}"
    elif op.kind == "revert":
        line = f"Reverting {commit}"
    else:
        return "Bisecting (git bisect in progress)"
    if op.step is not None and op.steps is not None:
        line += f", step {op.step} of {op.steps}"
    if conflicts:
        tail = "conflicts to fix"
    elif op.kind == "am":  # stopped on a patch that did not apply: no conflict says so
        tail = "stopped on a patch: git am --continue once it is applied, else --skip or --abort"
    elif op.sequence:  # a commit of several done by hand (`git commit`): the rest to go
        tail = f"more commits to go: {_CONTINUE[op.kind]}"
    else:
        tail = f"all conflicts fixed: {_CONTINUE[op.kind]}"
    return f"{line} ({tail})"


def render_git(state: GitState | None, max_files: int) -> str:
    """The git part's text; empty when the workspace is not in a git repository."""
    if state is None:
        return ""
    if state.error:
        return f"{HEADER}\n({state.error})"
    op = state.in_progress
    branch = state.branch or "(detached HEAD)"
    if state.branch is None and op is not None and op.kind == "rebase" and op.branch:
        branch = f"{op.branch} (being rebased: HEAD detached)"
    lines = [HEADER, f"Branch: {branch}"]
    if state.upstream:
        lines.append(f"Upstream: {state.upstream} (ahead {state.ahead}, behind {state.behind})")
    lines.append(f"HEAD: {state.oid[:7]}" if state.oid else "HEAD: (no commits yet)")
    staged, changed, conflicts = [], [], []
    for e in state.entries:
        if e.xy == "??":
            continue
        x, y = e.xy[0], e.xy[1]
        path = path_line(e.path)
        shown = f"{path_line(e.orig)} -> {path}" if e.orig else path
        if e.xy in UNMERGED:
            conflicts.append(f"{e.xy} {path}")
            continue
        if x != ".":
            staged.append(f"{x} {shown}")
        if y != ".":
            changed.append(f"{y} {path}{_submodule(e.sub)}")
    if op is not None:
        lines.append(_in_progress(op, bool(conflicts)))
    untracked = _untracked_groups(state.untracked, state.tracked) if state.untracked else []
    body = (_group("Conflicts", conflicts, max_files) + _group("Staged", staged, max_files)
            + _group("Changed", changed, max_files)
            + _group("Untracked", untracked, max_files))
    if state.unread:  # git was not asked for untracked files: "clean" would be untrue
        body.append(f"Untracked files: not listed ({', '.join(map(path_line, state.unread))} "
                    "is not a regular file, which git would wait on)")
    lines += body or ["Working tree clean."]
    return "\n".join(lines)
