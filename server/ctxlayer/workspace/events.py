"""What a file event can change: the map from a changed path to the segment parts.

Owns STYLE.md section 5's cache table for the workspace, as a mixin of `Workspace` (it reads
the workspace's live fields: root, repo, file set, agent / config / skill paths, selected
files): .git/HEAD, index, refs, config -> git (+ tree); .git/info/exclude and .gitignore ->
tree, git, files; the user's excludes file (core.excludesFile) -> tree, git, files; agent files
-> agentFiles (+ files); anything at, below or above a skill root
-> skills; a selected file -> files; the file an agent or selected symlink points to -> as the
link; create / delete / move -> tree + git (+ files); a content write of a listed file -> git.
Also the cheap filter the watcher applies to every event, and which events touch only HEAD and
local refs (read without running git). Pure decisions on paths: no I/O.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ctxlayer.workspace.gitstate import Repo
from ctxlayer.workspace.ignore import Globs

#: config: a branch's upstream (`git branch -u`), remotes, core.excludesFile; the rest of the
#: names: an operation in progress (a merge, a rebase, a cherry-pick, a revert, a bisect)
GIT_WATCHED = ("HEAD", "index", "packed-refs", "config", "info/exclude", "MERGE_HEAD",
               "CHERRY_PICK_HEAD", "REVERT_HEAD", "BISECT_LOG", "rebase-merge", "rebase-apply",
               "sequencer")


def folders_above(paths: frozenset[str]) -> frozenset[str]:
    """Every folder above each of ``paths``, up to the top of the file system."""
    folders: set[str] = set()
    for path in paths:
        folder = os.path.dirname(path)
        while folder not in folders:
            folders.add(folder)
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    return frozenset(folders)


def _holds(path: str, targets: frozenset[str]) -> bool:
    """Whether ``path`` is one of ``targets`` or a folder holding one (moved away, or back)."""
    if path in targets:
        return True
    prefix = path + os.sep
    return any(t.startswith(prefix) for t in targets)


class EventMap:
    root: Path
    _repo: Repo | None
    _file_set: frozenset[str]
    _selected_used: frozenset[str]
    _files_regex: Globs | None
    _agent_paths: frozenset[str]
    #: every folder above an agent path (`folders_above`): `mkdir .github` then its
    #: copilot-instructions.md at once writes the file before the new folder has a watch, so
    #: the folder's own event is the only one, and it must re-read the agent files
    _agent_folders: frozenset[str]
    #: the files the agent and selected symlinks in use point to, as the watcher names them
    #: (AGENTS.md -> docs/agents.md: an edit lands on the target, never on the link)
    _agent_targets: frozenset[str]
    _selected_targets: frozenset[str]
    _config_paths: frozenset[str]
    _skill_roots: tuple[str, ...]
    #: the user's own ignore file (git's core.excludesFile, ~/.config/git/ignore by default)
    #: and every hop of its links: editing it changes what git lists as untracked, as a
    #: .gitignore does, but it lies outside the workspace and was never looked at
    _excludes: frozenset[str]
    #: every folder above it: the folder made after the start, with the file in it
    _excludes_folders: frozenset[str]

    def _git_rel(self, path: str) -> str | None:
        """`path` relative to the repository's folder ('' for the folder itself), or None
        outside it. A linked worktree has two: its own (HEAD, index), looked at first as it
        lies inside the shared one (refs, config, info/exclude)."""
        repo = self._repo
        if repo is None:
            return None
        for folder in dict.fromkeys((str(repo.git_dir), str(repo.shared_dir))):
            if path == folder:
                return ""
            if path.startswith(folder + os.sep):
                return path[len(folder) + 1:]
        return None

    def _accept(self, path: str) -> bool:
        """Cheap pre-filter on the watcher thread: drop churn inside .git."""
        rel_git = self._git_rel(path)
        if rel_git is not None:
            return not rel_git or rel_git in GIT_WATCHED or rel_git.startswith("refs" + os.sep)
        root = str(self.root)
        if path.startswith(root + os.sep) or path == root:
            return True
        return (path in self._agent_paths or path in self._config_paths
                or path in self._agent_folders
                or path in self._excludes or path in self._excludes_folders
                or path in self._agent_targets or path in self._selected_targets
                or self._skill_root_of(path) is not None)

    def _head_only(self, path: str) -> bool:
        """A change to .git/HEAD or a local branch or tag, which HEAD's files can answer."""
        rel = self._git_rel(path)
        if rel is None:
            return False
        rel = rel.replace(os.sep, "/")
        return rel == "HEAD" or rel.startswith(("refs/heads/", "refs/tags/"))

    def _skill_root_of(self, path: str) -> str | None:
        """The skill root `path` is in, is, or leads to (a parent created or removed)."""
        for r in self._skill_roots:
            if path == r or path.startswith(r + os.sep) or r.startswith(path + os.sep):
                return r
        return None

    def _affected(self, path: str, structural: bool | None) -> set[str]:
        """The parts a change at `path` can affect. structural: True for create / delete /
        move, False for a content write, None when unknown (refresh() from a save)."""
        if not os.path.isabs(path):
            path = str(self.root / path)
        path = os.path.normpath(path)
        parts: set[str] = set()
        if (path in self._agent_paths or path in self._agent_folders
                or _holds(path, self._agent_targets)):
            parts |= {"agentFiles", "files"}
        if _holds(path, self._selected_targets):
            parts.add("files")
        if path in self._excludes or path in self._excludes_folders:
            parts |= {"tree", "git", "files"}
        if self._skill_root_of(path) is not None:
            parts.add("skills")
        rel = self._git_rel(path)
        if rel is not None:
            if rel == "info/exclude":
                return parts | {"tree", "git", "files"}
            if rel in GIT_WATCHED or rel.startswith("refs" + os.sep) or not rel:
                return parts | {"git", "tree"}
            return parts
        root = str(self.root)
        if not path.startswith(root + os.sep):
            return parts | ({"tree", "git", "files", "agentFiles", "skills"}
                            if path == root else set())
        rel = path[len(root) + 1:].replace(os.sep, "/")
        name = rel.rsplit("/", 1)[-1]
        if rel == ".git" or rel.startswith(".git/"):
            return parts | {"tree", "git"}  # a repository appeared or vanished
        if name == ".gitignore":
            parts |= {"tree", "git", "files"}
        if rel in self._selected_used or (self._files_regex and self._files_regex.match(rel)):
            parts.add("files")
        if structural or (structural is None and rel not in self._file_set):
            parts |= {"tree", "git"}
            if structural and rel not in self._file_set:
                parts.add("files")  # a folder moved or vanished may hold selected files
        elif rel in self._file_set:
            parts.add("git")
        return parts


def configs_touched(path: str, config_files: Iterable[Path]) -> list[Path]:
    """The config files a change at ``path`` can have changed: the file itself, or those in a
    folder made or moved there (~/.config/ctxlayer made after the start, with its toml)."""
    return [c for c in config_files
            if path == str(c) or str(c).startswith(path + os.sep)]


def names_ignore_rules(path: str) -> bool:
    return path.endswith(os.sep + ".gitignore") or path.endswith(
        os.sep + "info" + os.sep + "exclude")
