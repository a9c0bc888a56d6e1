"""Which folders the watcher keeps: the answer to `keep(path)` for the folder-by-folder watch.

A folder below the workspace is kept when the tree could list something in it: it is not
ignored (the .gitignore files on its way down, `.git/info/exclude`, the `ignore` setting), or
git lists a file in it anyway (a tracked file inside an ignored folder), or it holds a file
the segment reads by name (an agent file, a selected file named without a glob, a link's
target: `gen/out.md` in an ignored gen/, .github/ ignored after its copilot-instructions.md
was read; their edits were never seen), or it leads to a skill root (`.claude/skills` is
watched even when `.claude` is ignored). The repository's own
folder is not descended into from the workspace: the Workspace watches the few parts of it
that matter (the folder alone, `refs/` whole, `info/`). Folders outside the workspace (the
skill roots and agent folders elsewhere, refs of a repository outside it) are always kept.

Owns the ignore rules read for that purpose (each .gitignore read once, on first need, until
`reset()` after an ignore file changed). Thread-safe: the watcher asks from its reading thread.
Reads .gitignore files only.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

from ctxlayer import userfiles
from ctxlayer.workspace.ignore import IgnoreRules, parse_rules


def folders_of(files: Iterable[str]) -> frozenset[str]:
    """Every folder above each of ``files`` ('/'-separated, relative), the workspace's own
    ('') left out."""
    folders: set[str] = set()
    for path in files:
        cut = path.rfind("/")
        while cut > 0:
            folder = path[:cut]
            if folder in folders:
                break
            folders.add(folder)
            cut = path.rfind("/", 0, cut)
    return frozenset(folders)


class KeptFolders:
    def __init__(self, root: Path, git_dir: Path | None, extra_patterns: list[str],
                 always: Iterable[str] = ()) -> None:
        self.root = os.path.abspath(root)
        self._extra = list(extra_patterns)
        self._always = tuple(a.strip("/") for a in always)
        self._lock = threading.Lock()
        self._git_dir = os.path.abspath(git_dir) if git_dir is not None else None
        self._listed: frozenset[str] = frozenset()
        self._in_use: frozenset[str] = frozenset()
        self._rules = IgnoreRules()
        self._read: set[str] = set()
        self.reset()

    def set_git_dir(self, git_dir: Path | None) -> None:
        with self._lock:
            self._git_dir = os.path.abspath(git_dir) if git_dir is not None else None
        self.reset()

    def set_extra(self, extra_patterns: list[str]) -> None:
        """New `ignore` setting (the rules are read again)."""
        self._extra = list(extra_patterns)
        self.reset()

    def set_listed(self, files: Iterable[str]) -> None:
        """The folders holding the files the tree lists ('/'-separated, relative)."""
        folders = folders_of(files)
        with self._lock:
            self._listed = folders

    def set_in_use(self, files: Iterable[str]) -> frozenset[str]:
        """The folders holding the files the segment reads by name ('/'-separated,
        relative), ignored or not; returns the folders kept only from now on."""
        folders = folders_of(files)
        with self._lock:
            added = folders - self._in_use - self._listed
            self._in_use = folders
        return added

    def reset(self) -> None:
        """Forget the rules read so far (an ignore file changed)."""
        rules = IgnoreRules()
        if self._extra:
            rules.add("", parse_rules("\n".join(self._extra)))
        with self._lock:
            git_dir = self._git_dir
        if git_dir is not None:
            try:
                text = userfiles.text(Path(git_dir, "info", "exclude"))
                rules.add("", parse_rules(text))
            except OSError:
                pass
        with self._lock:
            self._rules = rules
            self._read = set()

    def keep(self, path: str) -> bool:
        """Whether the folder at `path` (absolute) is watched."""
        with self._lock:
            git_dir = self._git_dir
            if git_dir is not None and (path == git_dir or path.startswith(git_dir + os.sep)):
                rel_git = path[len(git_dir) + 1:]
                return rel_git == "refs" or rel_git.startswith("refs" + os.sep)
            if not path.startswith(self.root + os.sep):
                return True
            rel = path[len(self.root) + 1:].replace(os.sep, "/")
            if rel == ".git" or rel.startswith(".git/"):
                return False
            if rel in self._listed or rel in self._in_use:
                return True
            for a in self._always:
                if rel == a or a.startswith(rel + "/") or rel.startswith(a + "/"):
                    return True
            parts = rel.split("/")
            for depth in range(len(parts)):
                folder = "/".join(parts[:depth])
                if folder not in self._read:
                    self._read.add(folder)
                    self._rules.read(Path(self.root), folder)
            return not self._rules.ignored_with_parents(rel, True)
