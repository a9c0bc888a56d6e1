"""What the git CLI says about the workspace: its file list and its status.

Owns: finding the user's own ignore file (core.excludesFile) as git does, running
`git ls-files -c -t -z` and `git --no-optional-locks status --porcelain=v2 --branch
-z --untracked-files=all -- .` (in parallel, started before the repository is even looked up,
so that finding it overlaps them), parsing them into a `GitState`, which parts of a repository
the watcher watches, and the read-ahead of git while a watcher batch waits out its debounce.
`--no-optional-locks` keeps status from rewriting .git/index, which would wake our own watcher
in a loop. Finding the repository and reading HEAD without a process is gitrefs.py's. Must
not render text (gitpart.py and tree.py do) and never raises: failures come back as `error`.

An ignore file that is a named pipe (a folder's .gitignore, .git/info/exclude, the user's
core.excludesFile) is never waited on: git's open of it waits for a writer, and the status with
it, until GIT_TIMEOUT_S (60 s, then "git timed out" and no git state at all). Those git reads
whatever the folder is are looked at before the status is waited for; one in a folder deeper
down is found when the status stalls in the open of a pipe (Linux says so in /proc). Either
way the status runs again without untracked files, which git reads the ignore files for, and
`GitState.unread` names the pipes; git reads .git/info/exclude for every status: when that one
is a pipe, no status runs and `error` says why.
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ctxlayer import userfiles
from ctxlayer.workspace.gitops import InProgress, read_in_progress

log = logging.getLogger(__name__)

GIT_TIMEOUT_S = 60.0
#: how often a status still running is looked at for a stall in the open of a named pipe
STALL_CHECK_S = 0.25
#: folders looked into for the ignore file a stalled status waits on, at most
MAX_STALL_FOLDERS = 20_000


@dataclass(frozen=True, slots=True)
class Repo:
    toplevel: Path
    git_dir: Path  # HEAD and the index (in a linked worktree: .git/worktrees/<name>)
    prefix: str  # the workspace's path inside the repository, '' or ending with '/'
    #: a linked worktree's shared .git, which holds refs/, packed-refs, config and
    #: info/exclude; None when that is `git_dir` itself
    common_dir: Path | None = None

    @property
    def shared_dir(self) -> Path:
        """Where refs, config and info/exclude are (the common dir of a linked worktree)."""
        return self.common_dir if self.common_dir is not None else self.git_dir


#: porcelain v2's codes of an unmerged path (a conflict)
UNMERGED = frozenset(("DD", "AU", "UD", "UA", "DU", "AA", "UU"))


@dataclass(frozen=True, slots=True)
class Entry:
    path: str  # relative to the workspace
    xy: str  # porcelain v2 XY ('.' = unchanged), '??' untracked, 'UU' etc. unmerged
    orig: str | None = None  # rename/copy source
    #: porcelain v2's submodule field: 'N...' for a file, 'S<c><m><u>' for a submodule whose
    #: commit changed (C), tracked content changed (M), untracked files appeared (U)
    sub: str = "N..."


@dataclass(frozen=True, slots=True)
class GitState:
    tracked: tuple[str, ...] = ()  # workspace-relative, from ls-files
    entries: tuple[Entry, ...] = ()
    branch: str | None = None  # None when detached
    oid: str | None = None  # None before the first commit
    upstream: str | None = None
    ahead: int = 0
    behind: int = 0
    error: str | None = None
    untracked: tuple[str, ...] = field(default=())
    tracked_raw: bytes = b""  # ls-files output, so an unchanged index reuses `tracked`
    in_progress: InProgress | None = None  # a rebase, a merge... (gitops.py)
    #: ignore files that are not regular files (a named pipe), workspace-relative or absolute
    #: outside it: git was not asked for untracked files, for which it would have opened them
    unread: tuple[str, ...] = ()

    @property
    def deleted(self) -> frozenset[str]:
        """Listed files gone from the work tree. Of the conflicts only 'both deleted' (DD):
        'deleted by them' (UD) and 'by us' (DU) leave the other side's file on disk."""
        return frozenset(e.path for e in self.entries
                         if e.xy == "DD" or (e.xy[1:] == "D" and e.xy not in UNMERGED))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["LC_ALL"] = "C"
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    env.pop("GIT_INDEX_FILE", None)
    return env


def _decode(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


def _path(b: bytes) -> str:
    """A path as git wrote it, decoded as the file system's names are (`os.fsdecode`): a byte
    that is not UTF-8 kept (it was replaced, so the name matched no file the watcher or the
    listing saw; the segment writes it as its escape)."""
    return b.decode("utf-8", errors="surrogateescape")


class Reading:
    """ls-files and status running for one workspace folder (see `start`)."""

    def __init__(self, root: Path) -> None:
        self.error: str | None = None
        self.root = root
        self._procs: list[subprocess.Popen] = []
        status = STATUS
        try:
            # -t tags each file: 'S ' is skip-worktree (outside a sparse checkout), not on disk
            for cmd in (["git", "ls-files", "-c", "-t", "-z"], status):
                self._procs.append(subprocess.Popen(cmd, cwd=root, env=_env(),
                                                    stdout=subprocess.PIPE,
                                                    stderr=subprocess.PIPE))
        except OSError as e:
            self.error = f"git could not run: {e}"
            self.cancel()

    def cancel(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
        self._procs = []

    def failure(self) -> str | None:
        """Wait for both; what git said if it could not read the repository, else None."""
        if self.error is not None:
            return self.error
        try:
            results = [(proc.communicate(timeout=GIT_TIMEOUT_S)[1], proc.returncode)
                       for proc in self._procs]
        except subprocess.TimeoutExpired:
            self.cancel()
            return "git timed out"
        for err, code in results:
            if code != 0:
                lines = _decode(err).strip().splitlines()
                return "git failed: " + (lines[0] if lines else "unknown error")
        return None

    def finish(self, repo: Repo, previous: GitState | None = None) -> GitState:
        """Wait for both and parse (reusing `previous.tracked` when the index lists the same
        files); without untracked files when an ignore file is a named pipe (module doc)."""
        if self.error is not None:
            return GitState(error=self.error)
        ls, st = self._procs
        try:
            ls_out, ls_err = ls.communicate(timeout=GIT_TIMEOUT_S)
            unread = pipes_git_reads(self.root, repo)
            st_out, st_err = (b"", b"") if unread else self._status(st)
        except subprocess.TimeoutExpired:
            self.cancel()
            return GitState(error="git timed out")
        except _Stalled:
            unread = pipes_below(self.root, repo) or ["."]
        st_code = st.returncode
        exclude = str(repo.shared_dir / "info" / "exclude")
        if exclude in unread:  # git reads it for any status, untracked files or not
            self.cancel()
            return GitState(error=f"{exclude}: {userfiles.NOT_A_FILE_SAID}: git reads it for "
                            "every status and would wait on it")
        if unread:  # never waited on: the status again, without untracked files (and the
            # user's excludes file, read for any status, only of use for those)
            self.cancel()
            st_code, st_out, st_err = _run(
                ["git", "-c", f"core.excludesFile={os.devnull}", *STATUS[1:-3],
                 "--untracked-files=no", "--", "."], self.root)
        if ls.returncode != 0 or st_code != 0:
            err = _decode(ls_err or st_err).strip().splitlines()
            return GitState(error="git failed: " + (err[0] if err else "unknown error"))
        if previous is not None and previous.tracked_raw == ls_out and not previous.error:
            tracked = previous.tracked
        else:
            tracked = checked_out(ls_out, self.root)
        if "./" in tracked:
            # the folder itself is an entry of the index: a submodule not checked out, whose
            # own files git does not know; the status read is the superproject's
            return GitState(error=(f"an uninitialized submodule of the repository at "
                                   f"{repo.toplevel}: git submodule update --init"))
        state = parse_status(st_out, repo.prefix, tracked)
        return replace(state, tracked_raw=ls_out, in_progress=read_in_progress(repo.git_dir),
                       unread=tuple(unread))

    def _status(self, st: subprocess.Popen) -> tuple[bytes, bytes]:
        """The status's output, looked at every STALL_CHECK_S: _Stalled when git waits in the
        open of a named pipe (Linux's /proc says `wait_for_partner`)."""
        deadline = time.monotonic() + GIT_TIMEOUT_S
        while True:
            try:
                return st.communicate(timeout=STALL_CHECK_S)
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    raise
                try:
                    waits = userfiles.read(Path(f"/proc/{st.pid}/wchan"), 256).decode()
                except OSError:  # no /proc: waited for until GIT_TIMEOUT_S, as before
                    waits = ""
                if "partner" in waits or "fifo" in waits:
                    raise _Stalled from None


class _Stalled(Exception):
    """git status waits in the open of a named pipe."""


#: the status of `Reading`: "-- ." keeps it to the workspace when that is a subfolder of the
#: repository
STATUS = ["git", "--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z",
          "--untracked-files=all", "--", "."]


def _run(cmd: list[str], root: Path) -> tuple[int, bytes, bytes]:
    try:
        done = subprocess.run(cmd, cwd=root, env=_env(), capture_output=True,
                              timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 1, b"", f"{cmd[1]}: {e}".encode()
    return done.returncode, done.stdout, done.stderr


def _not_a_file(path: Path) -> bool:
    """Whether ``path`` is there but neither a regular file nor a folder (a named pipe, a
    device, a socket): what an open for reading may wait on."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def pipes_git_reads(root: Path, repo: Repo) -> list[str]:
    """The ignore files a status of ``root`` reads whatever it finds that are named pipes:
    .git/info/exclude and the .gitignore of each folder from the repository's top down to
    ``root`` (workspace-relative, or absolute outside it)."""
    found = [str(p) for p in (repo.shared_dir / "info" / "exclude",) if _not_a_file(p)]
    folder = root
    while True:
        if _not_a_file(folder / ".gitignore"):
            found.append(_named(folder / ".gitignore", root))
        if folder == repo.toplevel or folder.parent == folder:
            return found
        folder = folder.parent


def pipes_below(root: Path, repo: Repo) -> list[str]:
    """The ignore files that are named pipes where a status stalled: those `pipes_git_reads`
    looks at, core.excludesFile, and every .gitignore under ``root`` (MAX_STALL_FOLDERS
    folders at most, .git left out)."""
    found = pipes_git_reads(root, repo)
    excludes = excludes_file(root)
    if _not_a_file(excludes):
        found.append(str(excludes))
    seen = 0
    for folder, subfolders, _files in os.walk(root):
        subfolders[:] = [d for d in subfolders if d != ".git"]
        seen += 1
        path = Path(folder) / ".gitignore"
        if folder != str(root) and _not_a_file(path):
            found.append(_named(path, root))
        if seen >= MAX_STALL_FOLDERS:
            break
    return found


def excludes_file(root: Path) -> Path:
    """The user's own ignore file, found as git finds it for ``root``: core.excludesFile (set in
    the repository's, the user's or the system's config), else $XDG_CONFIG_HOME/git/ignore,
    else ~/.config/git/ignore; there or not. One `git config` process."""
    _, out, _ = _run(["git", "config", "--path", "--get", "core.excludesFile"], root)
    named = _path(out).rstrip("\n")
    if named:
        return Path(root, named)  # an absolute one stays itself
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(config, "git", "ignore")


def _named(path: Path, root: Path) -> str:
    return os.path.relpath(path, root) if path.is_relative_to(root) else str(path)


def checked_out(ls_out: bytes, root: Path) -> tuple[str, ...]:
    """The files of `git ls-files -c -t -z` in the work tree. A skip-worktree entry (tag S)
    is in the index only when a sparse checkout leaves it out, but stays on disk when set by
    `git update-index --skip-worktree`: such an entry is kept if it is there. A sparse
    checkout leaves out whole folders, so a missing folder answers for all its files."""
    files: list[str] = []
    folders: dict[str, bool] = {}
    for p in ls_out.split(b"\0"):
        if not p:
            continue
        path = _path(p[2:])
        if p.startswith(b"S "):
            folder = os.path.dirname(path)
            if folder not in folders:
                folders[folder] = os.path.isdir(root / folder)
            if not folders[folder] or not os.path.lexists(root / path):
                continue
        files.append(path)
    return tuple(files)


def read_state(root: Path, repo: Repo, previous: GitState | None = None) -> GitState:
    """Run ls-files and status side by side and parse both."""
    return Reading(root).finish(repo, previous)


def parse_status(out: bytes, prefix: str, tracked: tuple[str, ...] = ()) -> GitState:
    """Parse `git status --porcelain=v2 --branch -z` (paths are repository-relative)."""
    branch = oid = upstream = None
    ahead = behind = 0
    entries: list[Entry] = []
    untracked: list[str] = []
    fields = out.split(b"\0")
    i = 0

    def rel(p: bytes) -> str:
        s = _path(p)
        return s[len(prefix):] if prefix and s.startswith(prefix) else s

    while i < len(fields):
        f = fields[i]
        i += 1
        if not f:
            continue
        kind = f[:1]
        if kind == b"#":
            words = _decode(f).split(" ", 2)
            if len(words) < 3:
                continue
            key, value = words[1], words[2]
            if key == "branch.oid":
                oid = None if value == "(initial)" else value
            elif key == "branch.head":
                branch = None if value == "(detached)" else value
            elif key == "branch.upstream":
                upstream = value
            elif key == "branch.ab":
                a, _, b = value.partition(" ")
                ahead, behind = abs(int(a or 0)), abs(int(b or 0))
        elif kind == b"1":
            parts = f.split(b" ", 8)
            if len(parts) == 9:
                entries.append(Entry(rel(parts[8]), _decode(parts[1]), sub=_decode(parts[2])))
        elif kind == b"2":
            parts = f.split(b" ", 9)
            orig = fields[i] if i < len(fields) else b""
            i += 1
            if len(parts) == 10:
                entries.append(Entry(rel(parts[9]), _decode(parts[1]), rel(orig),
                                     _decode(parts[2])))
        elif kind == b"u":
            parts = f.split(b" ", 10)
            if len(parts) == 11:
                entries.append(Entry(rel(parts[10]), _decode(parts[1])))
        elif kind == b"?":
            path = rel(f[2:])
            untracked.append(path)
            entries.append(Entry(path, "??"))
    return GitState(tracked=tracked, entries=tuple(entries), branch=branch, oid=oid,
                    upstream=upstream, ahead=ahead, behind=behind, untracked=tuple(untracked))


def watched_parts(repo: Repo | None) -> tuple[list[Path], list[Path]]:
    """What of a repository is watched: refs/ whole, the folder itself and info/ alone (HEAD,
    index, packed-refs, config, info/exclude); never objects/ or logs/. A linked worktree
    keeps HEAD and its index in its own folder but refs, config and info/exclude in the
    shared one: both are watched, or `git reset --soft` and `git fetch` there go unseen."""
    if repo is None:
        return [], []
    shared = repo.shared_dir
    alone = [repo.git_dir] if shared == repo.git_dir else [repo.git_dir, shared]
    return [shared / "refs"], [*alone, shared / "info"]


class Prefetch:
    """One git reading started ahead of a flush, on its own thread."""

    def __init__(self, read: Callable[[], tuple], delay_s: float) -> None:
        self.started: float | None = None
        self.result: tuple | None = None
        self.done = threading.Event()
        self._read = read
        self._delay = delay_s
        threading.Thread(target=self._run, name="ctxlayer-git-prefetch", daemon=True).start()

    def _run(self) -> None:
        try:
            time.sleep(self._delay)  # let a cluster of events (an editor's save) land
            self.started = time.monotonic()
            self.result = self._read()
        except Exception:
            log.exception("git prefetch failed")
        finally:
            self.done.set()
