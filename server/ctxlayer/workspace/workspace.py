"""The live workspace: its parts, its current segment, and what each file event invalidates.

Owns: the `Workspace` object (first scan, refresh of just the affected parts, the watcher's
lifecycle and which folders it watches: kept.py decides, and after an ignore file changes it
is asked again), the immutable `WorkspaceSegment` snapshots, and telling the caller when a
`ctxlayer.toml` changed. Which parts an event can change is events.py's map. Git is read by
the CLI for status and the file list, by GitPython for the repository and HEAD (events that
touch only HEAD or local refs run no git process). Thread-safe: every refresh holds
one lock; readers get the last published snapshot without waiting. While a watcher batch
waits out its debounce, git is read ahead on a side thread; the flush uses that reading only
if it started after the batch's last event (so the latency is about max(debounce, git), not
their sum).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from ctxlayer import userfiles
from ctxlayer.config import CONFIG_FILE, Config, WorkspaceConfig, default_user_config_dir
from ctxlayer.protocol import LeftOut, SegmentPart, WorkspaceSegment
from ctxlayer.workspace import (
    agents,
    filelist,
    gitpart,
    gitrefs,
    gitstate,
    selected,
    skills,
    tree,
)
from ctxlayer.workspace.agents import is_inside
from ctxlayer.workspace.events import (
    EventMap,
    configs_touched,
    folders_above,
    names_ignore_rules,
)
from ctxlayer.workspace.ignore import compile_globs
from ctxlayer.workspace.kept import KeptFolders
from ctxlayer.workspace.segment import PART_ORDER, assemble, make_part
from ctxlayer.workspace.watcher import Batch, Watcher

log = logging.getLogger(__name__)

Count = Callable[[str], int]
OnChange = Callable[[WorkspaceSegment, list[str]], None]
OnConfig = Callable[[list[Path]], None]
#: how long after a batch's first event git is read ahead of the flush (capped at debounce/4)
PREFETCH_DELAY_S = 0.03


def is_news(before: WorkspaceSegment | None, after: WorkspaceSegment | None,
            changed: list[str]) -> bool:
    """Whether a recomputed segment is worth telling: a part's text changed, or only what was
    left out (AGENTS.md no longer 'not UTF-8 text' but 'too long': the text is the same empty
    part, and the daemon kept the old reason)."""
    return after is not None and (bool(changed) or before is None
                                  or before.left_out != after.left_out)


#: the links followed at most to find a link's hops (a loop stops there)
MAX_HOPS = 40


def link_hops(path: str) -> list[Path]:
    """Where the link at ``path`` leads, hop by hop (its folders resolved, each hop's own name
    kept), the last hop whether or not it exists; [] for a file that is no link."""
    hops: list[Path] = []
    current = path
    for _ in range(MAX_HOPS):
        try:
            target = os.readlink(current)
        except OSError:  # no link (a file, a missing one): the chain ends here
            break
        current = os.path.join(os.path.dirname(current), target)
        hops.append(Path(os.path.realpath(os.path.dirname(current))) / os.path.basename(current))
    return hops


#: how far above a folder of the chain that is not there yet a folder is looked for, to watch
#: for it being made: ~/.config/ctxlayer in a home with no ~/.config is two; an
#: XDG_CONFIG_HOME that is nowhere near made is not waited on from the top of the disk
AWAIT_LEVELS = 3


def nearest_folder(folder: Path) -> Path | None:
    """``folder`` if it is there, else the nearest folder above it that is, at most
    `AWAIT_LEVELS` up; None when none is."""
    for candidate in [folder, *folder.parents][:AWAIT_LEVELS + 1]:
        if candidate.is_dir():
            return candidate
    return None


def named_form(named: Path | None, root: Path) -> Path | None:
    """`named` made absolute, when it names the folder `root` is and can stand for it on the
    way from home; else None. A name with `..` parts cannot: the system reads `link/..` as the
    folder above where the link leads, while the name's own folders read `link/../proj` as
    `proj` beside the link, another folder whose agent files are not this workspace's."""
    if named is None or ".." in named.parts:
        return None
    if os.path.realpath(named) != os.path.realpath(root):
        return None
    return Path(os.path.abspath(named))


class Workspace(EventMap):
    """One workspace folder's segment, kept fresh.

    `count` turns text into tokens (production: `tokenizers.counter_for(model).count`).
    `home` and `user_config_dir` default to the real ones; tests pass their own.
    `opened_as` is the folder as the user named it when `root` is its resolved path
    (~/work/proj, ~/work leading to another disk): the agent files of the folders on that
    way (~/work/AGENTS.md) are read too. Ignored unless it leads to `root`, and when it has
    `..` parts (`named_form`).
    """

    def __init__(self, root: Path, config: Config | WorkspaceConfig, count: Count,
                 home: Path | None = None, user_config_dir: Path | None = None,
                 opened_as: Path | None = None) -> None:
        self.root = Path(os.path.abspath(root))
        self.opened_as = named_form(opened_as, self.root)
        self.config = config.workspace if isinstance(config, Config) else config
        self._count = count
        self.home = Path(os.path.abspath(home)) if home is not None else Path.home()
        self.user_config_dir = (Path(os.path.abspath(user_config_dir))
                                if user_config_dir is not None else default_user_config_dir())
        self._lock = threading.RLock()
        self._segment: WorkspaceSegment | None = None
        self._parts: dict[str, SegmentPart] = {}
        self._left: dict[str, list[LeftOut]] = {name: [] for name in PART_ORDER}
        self._repo: gitstate.Repo | None = None
        self._files: list[str] = []
        self._file_set: frozenset[str] = frozenset()
        self._tree_key: tuple | None = None
        self._agent_used: frozenset[Path] = frozenset()
        self._agent_targets: frozenset[str] = frozenset()
        self._selected_targets: frozenset[str] = frozenset()
        self._agent_paths = frozenset(str(p) for p in agents.candidates(
            self.root, self.home, self.user_config_dir, self.config.agent_files,
            self.opened_as))
        self._agent_folders = folders_above(self._agent_paths)
        self._files_regex = compile_globs([p for p in self.config.files if ".." not in p])
        self._selected_used: frozenset[str] = frozenset()
        self._extra = filelist.extra_rules(self.config.ignore)
        self._git_state: gitstate.GitState | None = None
        self._skill_roots = tuple(str(p) for p in skills.roots(
            self.root, self.home, self.user_config_dir))
        self.skills: tuple = ()  # the skills found (core.prompt.Skill), for a PromptSpec
        self.config_files = tuple(p for p in (self.user_config_dir / CONFIG_FILE,
                                              self.root / CONFIG_FILE))
        self._config_paths = frozenset(str(p) for p in self.config_files)
        self._watcher: Watcher | None = None
        self._kept: KeptFolders | None = None
        self._watched_git: gitstate.Repo | None = None
        self._watched_skills: set[str] = set()
        self._watched_extra: set[Path] = set()
        #: folders of the chain not made yet (~/.config/ctxlayer), and the nearest folder
        #: above each that is, watched alone until the folder itself is there
        self._awaited: dict[Path, Path] = {}
        self._targets_looked_at: frozenset[str] = frozenset()
        self._excludes: frozenset[str] = frozenset()  # known once watching (events.py)
        self._excludes_folders: frozenset[str] = frozenset()
        self._on_change: OnChange | None = None
        self._on_config: OnConfig | None = None
        self._pf_lock = threading.Lock()
        self._prefetch: gitstate.Prefetch | None = None
        self._last_event = 0.0

    # --- public API ---------------------------------------------------------------------------

    @property
    def segment(self) -> WorkspaceSegment:
        """The current snapshot (scans first if no scan ran yet). Never mutated."""
        seg = self._segment
        return seg if seg is not None else self.scan()

    def scan(self) -> WorkspaceSegment:
        """Compute every part from scratch and publish the segment."""
        self.refresh(None)
        assert self._segment is not None
        return self._segment

    def refresh(self, paths: Iterable[Path | str] | None = None) -> list[str]:
        """Recompute the parts `paths` can affect (None: all); return the names of the parts
        whose text changed, in segment order. Calls `on_change` (if watching) when any did, or
        when what was left out changed."""
        with self._lock:
            before = self._segment
            if paths is None:
                parts = set(PART_ORDER)
            else:
                parts = set()
                for path in paths:
                    parts |= self._affected(str(path), None)
            changed = self._recompute(parts)
            callback = self._on_change
            segment = self._segment
        if callback is not None and is_news(before, segment, changed):
            try:
                callback(segment, changed)
            except Exception:
                log.exception("segment change callback failed")
        return changed

    def start_watching(self, on_change: OnChange, on_config: OnConfig | None = None) -> None:
        """Watch the workspace (and the agent-file, skill and config folders outside it);
        `on_change(segment, changed_parts)` runs on a watcher thread after each burst that
        changed the text, and `on_config(paths)` after a burst that touched a `ctxlayer.toml`
        (the user's or the workspace's; `config_files` lists both), so the caller can reload
        the config (`config.reload_config`) and pass it to `reconfigure`."""
        with self._lock:
            if self._watcher is not None:
                raise RuntimeError("already watching")
            if self._segment is None:
                self.scan()
            self._on_change = on_change
            self._on_config = on_config
            repo = self._repo
            self._kept = KeptFolders(self.root, repo.shared_dir if repo else None,
                                     self.config.ignore,
                                     skills.WORKSPACE_ROOTS)
            self._kept.set_listed(self._files)
            self._kept.set_in_use(self._read_by_name())
            trees = [self.root]
            # skill roots inside the workspace are reached through it (kept.py lets them in)
            self._watched_skills = {p for p in self._skill_roots
                                    if is_inside(Path(p), self.root) or os.path.isdir(p)}
            trees += [Path(p) for p in self._skill_roots
                      if not is_inside(Path(p), self.root) and os.path.isdir(p)]
            shallow: list[Path] = []
            self._awaited = {}
            for folder in agents.folder_chain(self.root, self.home, self.user_config_dir,
                                              self.opened_as):
                if not is_inside(folder, self.root):
                    self._await_or_watch(folder, shallow)
            for folder in self._find_excludes():
                self._await_or_watch(folder, shallow)
            git_trees, git_alone = gitstate.watched_parts(repo)
            cfg = self.config
            self._watcher = Watcher(trees + git_trees, shallow + git_alone, self._flush,
                                    self._accept, cfg.debounce_ms / 1000,
                                    cfg.debounce_max_ms / 1000, self._on_activity,
                                    keep_folder=self._kept.keep)
            self._watched_git = repo
            self._watch_targets(self._watcher)

    def _await_or_watch(self, folder: Path, shallow: list[Path]) -> None:
        """Watch ``folder`` alone, or the nearest folder above it until it is made."""
        above = nearest_folder(folder)
        if above is not None and above != folder:
            self._awaited[folder] = above
        if above is not None and above not in shallow:
            shallow.append(above)

    def _find_excludes(self) -> list[Path]:
        """Learn where the user's own ignore file is (events.py's `_excludes`); the folders
        its edits land in: its own, and those of the files its links lead to (a dotfiles
        checkout). Outside the workspace only: the tree's watch sees one inside it."""
        excludes = gitstate.excludes_file(self.root)
        paths = [excludes, *link_hops(str(excludes))]
        self._excludes = frozenset(str(p) for p in paths)
        self._excludes_folders = frozenset(
            str(p) for p in [excludes.parent, *excludes.parent.parents][:AWAIT_LEVELS + 1])
        folders = dict.fromkeys(p.parent for p in paths)
        return [folder for folder in folders if not is_inside(folder, self.root)]

    def watch_count(self) -> int | None:
        """inotify watches the watcher holds (None when not watching, or on a platform
        whose watcher does not count them)."""
        watcher = self._watcher
        return watcher.watch_count() if watcher is not None else None

    def watched_folders(self) -> set[str] | None:
        watcher = self._watcher
        return watcher.watched_folders() if watcher is not None else None

    def reconfigure(self, config: Config | WorkspaceConfig) -> list[str]:
        """Use new settings: recompute every part, return the parts whose text changed (and
        call `on_change` if watching). The debounce times apply from the next watch."""
        cfg = config.workspace if isinstance(config, Config) else config
        with self._lock:
            self.config = cfg
            self._agent_paths = frozenset(str(p) for p in agents.candidates(
                self.root, self.home, self.user_config_dir, cfg.agent_files, self.opened_as))
            self._agent_folders = folders_above(self._agent_paths)
            self._files_regex = compile_globs([p for p in cfg.files if ".." not in p])
            self._extra = filelist.extra_rules(cfg.ignore)
            self._tree_key = None
            self._git_state = None  # the file list is filtered again with the new rules
            kept, watcher = self._kept, self._watcher
        if kept is not None and watcher is not None:
            with self._lock:
                kept.set_in_use(self._read_by_name())
            kept.set_extra(cfg.ignore)
            watcher.sync_folders()
        return self.refresh(None)

    def stop(self) -> None:
        """Stop watching (idempotent)."""
        with self._lock:
            watcher, self._watcher = self._watcher, None
            self._on_change = None
        if watcher is not None:
            watcher.stop()

    # --- events -------------------------------------------------------------------------------

    def _on_activity(self, items: Batch) -> None:
        """Watcher thread, as events arrive: start reading git once per batch, so that git's
        own time overlaps the debounce instead of following it."""
        now = time.monotonic()
        with self._pf_lock:
            self._last_event = now
            if self._prefetch is not None:
                return
            if not any(self._affected(p, s) & {"tree", "git"} and not self._head_only(p)
                       for p, s in items.items()):
                return
            delay = min(PREFETCH_DELAY_S, self.config.debounce_ms / 4000)
            self._prefetch = gitstate.Prefetch(self._read_git, delay)

    def _take_prefetch(self) -> tuple | None:
        """The prefetched git reading if it started after the batch's last event."""
        with self._pf_lock:
            pf, self._prefetch = self._prefetch, None
            last = self._last_event
        if pf is None:
            return None
        pf.done.wait(gitstate.GIT_TIMEOUT_S * 2)
        if pf.started is not None and pf.started >= last and pf.result is not None:
            return pf.result
        return None

    def _flush(self, batch: Batch, full: bool) -> None:
        prefetched = self._take_prefetch()
        with self._lock:
            if self._watcher is None:
                return
            before = self._segment
            configs = list(dict.fromkeys(
                c for p in batch for c in configs_touched(p, self.config_files)))
            if full:
                parts = set(PART_ORDER)
            else:
                parts = set()
                for path, structural in batch.items():
                    parts |= self._affected(path, structural)
            rules_changed = full or any(names_ignore_rules(p) for p in batch)
            if self._awaited:  # before reading: a file written after this is then seen
                self._watch_awaited(self._watcher)
            if (prefetched is None and parts and not full
                    and all(self._head_only(p) for p in batch)):
                prefetched = self._read_head()
            changed = self._recompute(parts, prefetched) if parts else []
            watches = self._git_watches()
            resync = self._follow_repository(rules_changed)
            if watches != self._git_watches():
                # a repository (or a .git being made) watched only now: what git wrote since
                # the reading above (`git init`, then `git add` and `git commit` 80 ms later)
                # raised no event, so git is read again, now that the next write would
                again = set(self._recompute({"tree", "git"}))
                changed = [n for n in PART_ORDER if n in again or n in changed]
            callback, segment = self._on_change, self._segment
            on_config, watcher = self._on_config, self._watcher
        if resync and watcher is not None:
            watcher.sync_folders()  # a walk of the kept folders: outside the lock
        if (configs or full) and on_config is not None:
            try:
                on_config(configs or list(self.config_files))
            except Exception:
                log.exception("config change callback failed")
        if callback is not None and is_news(before, segment, changed):
            try:
                callback(segment, changed)
            except Exception:
                log.exception("segment change callback failed")

    # --- computing parts ----------------------------------------------------------------------

    def _read_git(self) -> tuple[gitstate.Repo | None, gitstate.GitState | None]:
        if not gitrefs.under_git(self.root):  # no repository can hold it: nothing to run
            return None, None
        reading = gitstate.Reading(self.root)  # git runs while GitPython finds the repository
        repo = gitrefs.find_repo(self.root)
        if repo is None:
            if gitrefs.nearest_git_is_a_file(self.root):
                # a worktree or submodule whose repository moved away: git says why, and
                # the git part and leftOut say it instead of the part vanishing
                failure = reading.failure()
                return None, (gitstate.GitState(error=failure) if failure else None)
            reading.cancel()
            return None, None
        return repo, reading.finish(repo, self._git_state)

    def _read_head(self) -> tuple[gitstate.Repo | None, gitstate.GitState | None] | None:
        """After events that touch only HEAD or local refs: the state with HEAD read from the
        files, no git process, when the status cannot have changed (same commit, and no
        upstream distance to recount); None when git must run."""
        prev, repo = self._git_state, self._repo
        if prev is None or prev.error or repo is None:
            return None
        head = gitrefs.read_head(self.root)
        if head is None or head.oid != prev.oid or head.upstream != prev.upstream:
            return None
        if head.branch != prev.branch and head.upstream is not None:
            return None
        return repo, replace(prev, branch=head.branch)

    def _recompute(self, parts: set[str], prefetched: tuple | None = None) -> list[str]:
        cfg = self.config
        count = self._count
        new: dict[str, SegmentPart] = {}
        if parts & {"tree", "git"}:
            repo, state = prefetched if prefetched is not None else self._read_git()
            self._repo = repo
            prev = self._git_state
            complete, unread = True, []
            if state is not None and not state.error:
                same = (prev is not None and prev.tracked is state.tracked
                        and prev.untracked == state.untracked and prev.deleted == state.deleted)
                files = self._files if same else filelist.from_git(state, self._extra)
            else:  # no repository, or git refused it (a broken index, "dubious ownership" of
                # a volume another user owns): the files are still on disk, the git part
                # says what went wrong
                files, complete, unread = filelist.walk(self.root, cfg.ignore)
            self._git_state = state
            if files != self._files:
                parts.add("files")
                if self._kept is not None:
                    self._kept.set_listed(files)
            self._files = files
            self._file_set = frozenset(files)
            key = (tuple(files), cfg.tree_token_budget, cfg.fold_threshold, tuple(unread))
            if key != self._tree_key or "tree" not in self._parts:
                t = tree.render_tree(files, count, cfg.tree_token_budget, cfg.fold_threshold)
                left = list(t.left_out)
                if not complete:
                    left.append(LeftOut(part="tree", path=".", reason=(
                        f"listing stopped at {filelist.MAX_WALK_FILES:,} files")))
                left += [LeftOut(part="tree", path=path, reason=(
                    f"{userfiles.NOT_A_FILE_SAID}: its ignore rules were not read"))
                    for path in unread]
                new["tree"] = make_part("tree", t.text, count)
                self._left["tree"] = left
                self._tree_key = key
            new["git"] = make_part("git", gitpart.render_git(state, cfg.git_max_files), count)
            self._left["git"] = ([LeftOut(part="git", path=".", reason=state.error)]
                                 if state is not None and state.error else [])
            self._left["git"] += [LeftOut(part="git", path=path, reason=(
                f"{userfiles.NOT_A_FILE_SAID}: git would wait on it, so the untracked files "
                "were not listed (not in the tree either)"))
                for path in (state.unread if state is not None else ())]
        if "agentFiles" in parts:
            a = agents.render_agents(self.root, self.home, self.user_config_dir,
                                     cfg.agent_files, cfg.agent_file_max_chars, self.opened_as)
            new["agentFiles"] = make_part("agentFiles", a.text, count)
            self._left["agentFiles"] = list(a.left_out)
            if frozenset(a.used) != self._agent_used:
                parts.add("files")
            self._agent_used = frozenset(a.used)
            # every hop of each agent file's links, the last one even while it is missing:
            # a target deleted and made again, or a link in the middle pointed elsewhere, was
            # never seen again (only a used file's final target was known)
            hops = [h for name in self._agent_paths for h in link_hops(name)]
            self._agent_targets = self._as_watched([*a.used, *hops])
        if "skills" in parts:
            sk = skills.render_skills(self.root, self.home, self.user_config_dir)
            new["skills"] = make_part("skills", sk.text, count)
            self._left["skills"] = list(sk.left_out)
            self.skills = sk.skills
        if "files" in parts:
            f = selected.render_files(self.root, cfg.files, self._files, cfg.files_char_budget,
                                      self._extra, self._agent_used)
            new["files"] = make_part("files", f.text, count)
            self._left["files"] = list(f.left_out)
            self._selected_used = frozenset(f.used)
            self._selected_targets = self._as_watched(
                Path(os.path.realpath(self.root / rel)) for rel in f.used)
        changed = [n for n in PART_ORDER if n in new and (
            n not in self._parts or self._parts[n].hash != new[n].hash)]
        self._parts.update(new)
        left_out = [item for n in PART_ORDER for item in self._left[n]]
        self._segment = assemble([self._parts[n] for n in PART_ORDER if n in self._parts],
                                 left_out, self._segment, count)
        return changed

    def _as_watched(self, reals: Iterable[Path]) -> frozenset[str]:
        """Resolved paths as the watcher names them: below the workspace, under the name it
        was opened by (a workspace opened through a symlink is watched under the link's)."""
        root_real = Path(os.path.realpath(self.root))
        names = set()
        for real in reals:
            try:
                names.add(str(self.root / real.relative_to(root_real)))
            except ValueError:
                names.add(str(real))
        return frozenset(names)

    def _read_by_name(self) -> list[str]:
        """The files below the workspace the segment reads by their name, relative: the
        agent files looked for, the selected files named without a glob, the files their
        links point to. Read even when ignored, so their folders are watched."""
        root = str(self.root) + os.sep
        below = [p[len(root):].replace(os.sep, "/")
                 for group in (self._agent_paths, self._agent_targets, self._selected_targets)
                 for p in group if p.startswith(root)]
        return below + selected.named_paths(self.config.files)

    def _watch_targets(self, watcher: Watcher) -> None:
        """The folder of a symlink's target outside the workspace that no watch covers
        (~/AGENTS.md pointing into ~/dotfiles) is watched alone, so an edit of the target is
        seen. Never a folder below the workspace: its tree watches it, and a watch alone
        there (on the root itself, while it is looked for after a move) walks nothing below."""
        targets = self._agent_targets | self._selected_targets
        if targets == self._targets_looked_at:  # asked after every flush: mostly no change
            return
        self._targets_looked_at = targets
        if self._kept is not None:  # a target in an ignored folder below the workspace
            added = self._kept.set_in_use(self._read_by_name())
            watcher.follow_folders([self.root / rel for rel in sorted(added)])
        watched = watcher.watched_folders() or set()
        root = str(self.root)
        for target in sorted(targets):
            folder = Path(os.path.dirname(target))
            if (target.startswith(root + os.sep) or folder in self._watched_extra
                    or str(folder) in watched):
                continue
            watcher.add_folders([], [folder])
            self._watched_extra.add(folder)

    def _watch_awaited(self, watcher: Watcher) -> None:
        """A folder of the chain made since the start (~/.config/ctxlayer, with its
        ctxlayer.toml and AGENTS.md) is watched from now on; one made part of the way
        (~/.config alone) has its nearest folder watched instead, to see the rest come."""
        for folder, above in list(self._awaited.items()):
            now = nearest_folder(folder)
            if now is None or now == above:
                continue
            watcher.add_folders([], [now])
            if now == folder:
                del self._awaited[folder]
            else:
                self._awaited[folder] = now

    @staticmethod
    def _watched_key(repo: gitstate.Repo | None) -> tuple[Path, Path] | None:
        """The folders of a repository the watcher watches (a workspace moved to another
        subfolder of the same repository watches the same)."""
        return (repo.git_dir, repo.shared_dir) if repo is not None else None

    def _git_watches(self) -> tuple[tuple[Path, Path] | None, bool]:
        """The repository watched, and whether a .git being made is."""
        return self._watched_key(self._watched_git), self.root / ".git" in self._watched_extra

    def _follow_repository(self, rules_changed: bool) -> bool:
        """After a flush: watch a repository that appeared; True when the watcher must be
        asked again which folders to keep (that, or an ignore file changed)."""
        watcher, kept = self._watcher, self._kept
        if watcher is None or kept is None:
            return False
        repo = self._repo
        self._watch_targets(watcher)
        for r in self._skill_roots:  # a skill root outside the workspace that appeared
            if r not in self._watched_skills and os.path.isdir(r):
                watcher.add_folders([Path(r)], [])
                self._watched_skills.add(r)
        dot_git = self.root / ".git"
        if repo is None and dot_git not in self._watched_extra and dot_git.is_dir():
            # a repository being made (git init): watch it until git can read it
            watcher.add_folders([], [dot_git])
            self._watched_extra.add(dot_git)
        if self._watched_key(repo) != self._watched_key(self._watched_git):
            kept.set_git_dir(repo.shared_dir if repo is not None else None)
            trees, alone = gitstate.watched_parts(repo)
            watcher.add_folders(trees, alone)
            self._watched_git = repo
            return True
        if rules_changed:
            kept.reset()
        return rules_changed

