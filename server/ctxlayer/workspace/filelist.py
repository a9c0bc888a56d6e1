"""The workspace's file list: which files exist and are not ignored.

Owns: inside a git repository, git's own list (tracked files still on disk, never a sparse
checkout's skip-worktree entries, plus untracked, not-ignored files, from one `GitState`);
outside one, a walk that reads every .gitignore on the way down and never follows symlinked folders (so symlink loops cannot trap it). The
`ignore` setting applies on top in both cases. Returns sorted '/'-separated relative paths;
renders nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from ctxlayer.workspace.gitstate import GitState
from ctxlayer.workspace.ignore import IgnoreRules, parse_rules

#: a walk outside git stops after this many files (e.g. a workspace opened on the home folder)
MAX_WALK_FILES = 200_000


def extra_rules(patterns: list[str]) -> IgnoreRules | None:
    if not patterns:
        return None
    rules = IgnoreRules()
    rules.add("", parse_rules("\n".join(patterns)))
    return rules


def from_git(state: GitState, extra: IgnoreRules | None) -> list[str]:
    deleted = state.deleted
    files = {p for p in state.tracked if p not in deleted}
    files.update(state.untracked)
    if extra is not None:
        files = {p for p in files if not extra.ignored_with_parents(p, False)}
    return sorted(files)


def walk(root: Path, extra_patterns: list[str]) -> tuple[list[str], bool, list[str]]:
    """Files under `root` not ignored by .gitignore files or the extra patterns.

    Returns (files, complete, unread); complete is False when MAX_WALK_FILES was reached;
    unread: the .gitignore files that are not regular files (their rules not applied).
    """
    rules = IgnoreRules()
    files: list[str] = []
    stack = [""]
    while stack:
        folder = stack.pop()
        rules.read(root, folder)
        if folder == "" and extra_patterns:
            rules.add("", parse_rules("\n".join(extra_patterns)))
        try:
            with os.scandir(root / folder if folder else root) as it:
                entries = list(it)
        except OSError:
            continue
        subfolders = []
        for entry in entries:
            if entry.name == ".git":
                continue
            rel = f"{folder}/{entry.name}" if folder else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if rules.ignored(rel, is_dir):
                continue
            if is_dir:
                subfolders.append(rel)
            else:
                files.append(rel)
                if len(files) >= MAX_WALK_FILES:
                    return sorted(files), False, rules.unread
        stack.extend(sorted(subfolders, reverse=True))
    return sorted(files), True, rules.unread
