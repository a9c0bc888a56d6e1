"""The watcher keeps to the folders the tree keeps: an ignored node_modules of 20,000 files
costs no inotify watch, new kept folders are watched as they appear, and an ignore file that
changes is followed. Counts the kernel's own watches (/proc/self/fdinfo)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from ws_helpers import Recorder, git, has, make_ws, part, write

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="inotify is Linux's")


def kernel_watches(ws) -> int:
    """The inotify watches the kernel holds on the watcher's descriptor."""
    fd = ws._watcher._folders.fd
    text = Path(f"/proc/self/fdinfo/{fd}").read_text()
    return sum(1 for line in text.splitlines() if line.startswith("inotify wd:"))


def make_node_modules(root: Path, files: int = 20_000, per_folder: int = 50) -> int:
    folders = 0
    for i in range(0, files, per_folder):
        d = root / "node_modules" / f"pkg{i // per_folder:03d}" / "lib"
        d.mkdir(parents=True)
        folders += 1
        for k in range(per_folder):
            (d / f"m{k}.js").write_bytes(b"module.exports = 1;\n")
    return folders


def test_an_ignored_node_modules_costs_no_watch_and_edits_elsewhere_are_seen(repo, home):
    write(repo, ".gitignore", "build/\n*.log\nnode_modules/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "ignore node_modules")
    assert make_node_modules(repo) == 400
    ws = make_ws(repo, home)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    try:
        watched = ws.watched_folders()
        assert not any(f.startswith(str(repo / "node_modules")) for f in watched), sorted(watched)
        # the workspace, src/, and the repository's folder, info/, refs/ and its subfolders
        assert str(repo) in watched and str(repo / "src") in watched
        assert str(repo / ".git") in watched and str(repo / ".git" / "refs" / "heads") in watched
        assert not any(f.startswith(str(repo / ".git" / "objects")) for f in watched)
        count = kernel_watches(ws)
        assert count == ws.watch_count() == len(watched)
        assert count < 20, sorted(watched)

        write(repo, "src/app.py", "print('edited')\n")
        rec.wait_for(has("git", "M src/app.py"))

        write(repo, "lib/deep/new.py", "N = 1\n")  # a new kept folder, two levels
        rec.wait_for(has("tree", "new.py"))
        assert {str(repo / "lib"), str(repo / "lib/deep")} <= ws.watched_folders()
        write(repo, "lib/deep/later.py", "L = 1\n")  # seen through the new folder's watch
        rec.wait_for(has("tree", "later.py"))

        (repo / "node_modules" / "fresh" / "dist").mkdir(parents=True)
        write(repo, "node_modules/fresh/dist/x.js", "1\n")
        write(repo, "src/util.py", "X = 2\n")  # something that does show, to wait on
        rec.wait_for(has("git", "M src/util.py"))
        assert not any(f.startswith(str(repo / "node_modules")) for f in ws.watched_folders())
        assert kernel_watches(ws) == ws.watch_count() < 25
    finally:
        ws.stop()


def test_a_changed_gitignore_is_followed(repo, home):
    write(repo, "gen/out/a.txt", "generated\n")
    write(repo, ".gitignore", "gen/\n")
    ws = make_ws(repo, home)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    try:
        assert str(repo / "gen") not in ws.watched_folders()
        write(repo, ".gitignore", "*.log\n")  # gen/ is no longer ignored
        rec.wait_for(has("tree", "a.txt"))
        deadline_calls = rec.wait_for(lambda c: str(repo / "gen/out") in ws.watched_folders())
        assert deadline_calls
        write(repo, "gen/out/b.txt", "more\n")  # an existing folder, watched since the change
        rec.wait_for(has("tree", "b.txt"))

        write(repo, ".gitignore", "gen/\n")
        rec.wait_for(has("tree", "a.txt", present=False))
        rec.wait_for(lambda c: str(repo / "gen") not in ws.watched_folders())
        assert kernel_watches(ws) == ws.watch_count()
    finally:
        ws.stop()


def test_a_moved_or_deleted_folder_moves_its_watches(repo, home):
    write(repo, "pkg/inner/mod.py", "M = 1\n")
    ws = make_ws(repo, home)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    try:
        assert str(repo / "pkg/inner") in ws.watched_folders()
        os.rename(repo / "pkg", repo / "moved")
        rec.wait_for(has("tree", "moved/"))
        rec.wait_for(lambda c: str(repo / "moved/inner") in ws.watched_folders())
        assert not any(f.startswith(str(repo / "pkg")) for f in ws.watched_folders())
        write(repo, "moved/inner/two.py", "T = 2\n")  # seen at the new place
        rec.wait_for(has("tree", "two.py"))
        for f in (repo / "moved/inner").iterdir():
            f.unlink()
        (repo / "moved/inner").rmdir()
        rec.wait_for(has("tree", "two.py", present=False))
        rec.wait_for(lambda c: str(repo / "moved/inner") not in ws.watched_folders())
        assert kernel_watches(ws) == ws.watch_count()
    finally:
        ws.stop()


def test_a_repository_created_after_the_start_is_watched(home, tmp_path):
    root = tmp_path / "plain"
    write(root, "a.py", "A = 1\n")
    ws = make_ws(root, home)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    try:
        assert part(ws.segment, "git").text == ""
        git(root, "init", "-q", "-b", "main")
        rec.wait_for(has("git", "Branch: main"))
        rec.wait_for(lambda c: str(root / ".git" / "refs") in ws.watched_folders())
        git(root, "add", "a.py")
        rec.wait_for(has("git", "Staged (1)"))
    finally:
        ws.stop()


def test_a_repository_seen_half_made_is_still_followed(home, tmp_path):
    """The first flush may come while `git init` is still writing: .git is there, no
    repository yet. The folder is watched until git can read it."""
    root = tmp_path / "plain"
    write(root, "a.py", "A = 1\n")
    ws = make_ws(root, home, debounce_ms=20)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    try:
        (root / ".git").mkdir()
        rec.wait_for(lambda c: str(root / ".git") in ws.watched_folders())
        git(root, "init", "-q", "-b", "main")
        rec.wait_for(has("git", "Branch: main"))
    finally:
        ws.stop()


def test_a_workspace_opened_through_a_symlink_is_watched(repo, home, tmp_path):
    link = tmp_path / "link-to-proj"
    os.symlink(repo, link)
    ws = make_ws(link, home)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    try:
        assert str(link) in ws.watched_folders()
        write(link, "through_link.py", "T = 1\n")
        rec.wait_for(has("tree", "through_link.py"))
    finally:
        ws.stop()


def test_a_workspace_deleted_and_made_again_is_watched_again(home, tmp_path):
    """The folder removed and cloned anew (`rm -rf proj && git clone ...`): its watch went
    with it and nothing said it came back, so the segment stayed empty until a restart. The
    root is looked for once a second while it is gone, and watched and read again. (Outside
    the home folder, whose own watch, for its agent files, would see it come back.)"""
    repo = tmp_path / "elsewhere" / "proj"
    write(repo, "a.py", "A = 1\n")
    ws = make_ws(repo, home)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    try:
        shutil.rmtree(repo)
        rec.wait_for(has("tree", "(no files)"))
        write(repo, "AGENTS.md", "Always run the tests.\n")
        git(repo, "init", "-q", "-b", "main")
        rec.wait_for(has("agentFiles", "Always run the tests."))
        rec.wait_for(lambda c: str(repo) in ws.watched_folders())
        write(repo, "later.py", "L = 1\n")  # watched again: a file after it is seen
        rec.wait_for(has("tree", "later.py"))
        shutil.rmtree(repo)  # and made again at once, before anything looked
        write(repo, "again.py", "A = 2\n")
        rec.wait_for(has("tree", "again.py"))
        write(repo, "after.py", "B = 3\n")
        rec.wait_for(has("tree", "after.py"))
    finally:
        ws.stop()


def test_a_workspace_swapped_by_rename_is_watched_again(home, tmp_path):
    """`mv proj proj.old && mv proj.new proj` (an atomic checkout): the watches followed the
    old folder to its new name, so no change in the new folder was ever seen again, and
    an edit in the old one was taken for the workspace's."""
    repo = tmp_path / "elsewhere" / "proj"
    write(repo, "a.py", "A = 1\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "old")
    new = tmp_path / "elsewhere" / "proj.new"
    write(new, "AGENTS.md", "New checkout rules.\n")
    write(new, "src/deep/mod.py", "D = 1\n")
    git(new, "init", "-q", "-b", "main")
    git(new, "add", "-A")
    git(new, "commit", "-qm", "new")
    ws = make_ws(repo, home)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    try:
        os.rename(repo, tmp_path / "elsewhere" / "proj.old")
        os.rename(new, repo)
        rec.wait_for(has("agentFiles", "New checkout rules."))
        write(repo, "AGENTS.md", "Edited after the swap.\n")
        rec.wait_for(has("agentFiles", "Edited after the swap."))
        write(repo, "added.py", "B = 2\n")
        rec.wait_for(has("git", "added.py"))
        # its folders walked again (not the root alone): a change below the root is seen
        rec.wait_for(lambda c: str(repo / "src" / "deep") in ws.watched_folders())
        write(repo, "src/deep/mod.py", "D = 2\n")
        rec.wait_for(has("git", "src/deep/mod.py"))
        git(repo, "add", "added.py")
        rec.wait_for(has("git", "Staged (1)"))
        write(tmp_path / "elsewhere" / "proj.old", "ghost.py", "G = 1\n")
        write(repo, "marker.py", "M = 1\n")
        rec.wait_for(has("tree", "marker.py"))
        assert "ghost.py" not in part(ws.segment, "tree").text
        rec.wait_for(lambda c: kernel_watches(ws) == ws.watch_count())
    finally:
        ws.stop()


def test_what_git_writes_while_a_new_repository_gets_its_watches_is_seen(home, tmp_path):
    """`git init`, then `git add -A && git commit` 80 ms later: the commit landed after the
    flush read git and before the repository was watched, so nothing said it happened and
    the git part stayed at "(no commits yet)" until an unrelated edit. Here the commit is
    made at that very moment, by the reading itself."""
    root = tmp_path / "plain"
    write(root, "a.py", "A = 1\n")
    ws = make_ws(root, home)
    ws.scan()
    read_git, committed = ws._read_git, []

    def read_then_commit():
        result = read_git()
        if result[0] is not None and not committed:  # the first reading to find it
            committed.append(True)
            git(root, "add", "-A")
            git(root, "commit", "-qm", "first")
        return result

    ws._read_git = read_then_commit
    rec = Recorder()
    ws.start_watching(rec)
    try:
        git(root, "init", "-q", "-b", "main")
        rec.wait_for(has("git", "Working tree clean"))
        assert "(no commits yet)" not in part(ws.segment, "git").text
    finally:
        ws.stop()
