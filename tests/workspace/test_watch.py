"""The watcher on real git repositories: each change reaches on_change once, debounced.

Waits poll a condition with a generous timeout; nothing here asserts elapsed time.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import threading
import time

from ws_helpers import Recorder, count, git, make_ws, part, write

from ctxlayer.config import WorkspaceConfig
from ctxlayer.workspace import Workspace


def latest_has(name, text, present=True):
    def check(calls):
        if not calls:
            return False
        return (text in part(calls[-1][0], name).text) == present
    return check


def test_edit_stage_commit_switch_delete(repo, home):
    os.symlink(repo / "src", repo / "src" / "loop")  # a symlink loop inside the watched tree
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "loop")
    ws = make_ws(repo, home)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    try:
        tree0 = part(ws.segment, "tree").hash
        write(repo, "src/app.py", "print('edited')\n")
        calls = rec.wait_for(latest_has("git", "Changed (1):\n  M src/app.py"))
        assert calls[-1][1] == ["git"] and part(calls[-1][0], "tree").hash == tree0

        git(repo, "add", "src/app.py")
        rec.wait_for(latest_has("git", "Staged (1):\n  M src/app.py"))

        git(repo, "commit", "-qm", "edit")
        sha = git(repo, "rev-parse", "--short=7", "HEAD").strip()
        rec.wait_for(latest_has("git", f"HEAD: {sha}"))
        assert "Working tree clean." in part(ws.segment, "git").text

        git(repo, "checkout", "-q", "-b", "feature")
        rec.wait_for(latest_has("git", "Branch: feature"))
        write(repo, "feat.py", "F = 1\n")
        git(repo, "add", "feat.py")
        git(repo, "commit", "-qm", "feat")
        rec.wait_for(latest_has("tree", "feat.py"))
        git(repo, "checkout", "-q", "main")
        rec.wait_for(lambda c: latest_has("git", "Branch: main")(c)
                     and latest_has("tree", "feat.py", present=False)(c))

        shutil.rmtree(repo / "src")
        rec.wait_for(lambda c: latest_has("tree", "src/", present=False)(c)
                     and latest_has("git", "D src/app.py")(c))
        calls = rec.snapshot()
        assert all(changed for _, changed in calls)
        versions = [seg.version for seg, _ in calls]
        assert versions == sorted(set(versions))  # one version per notification, increasing
        assert ws.segment is calls[-1][0]
    finally:
        ws.stop()


def test_content_edit_without_status_change_is_silent(repo, home):
    ws = make_ws(repo, home)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    try:
        write(repo, "notes.txt", "v1\n")  # untracked: a new name, so tree and git change
        calls = rec.wait_for(latest_has("tree", "notes.txt"))
        assert len(calls) == 1 and calls[0][1] == ["tree", "git"]
        for i in range(5):
            write(repo, "notes.txt", f"v{i + 2}\n")  # same name, same status
            write(repo, "build/out.js", f"{i}")  # ignored output
        write(repo, "marker.txt")
        calls = rec.wait_for(latest_has("tree", "marker.txt"))
        assert len(calls) == 2, [c for _, c in calls]
    finally:
        ws.stop()


def test_burst_of_10000_files_is_one_notification(repo, home):
    ws = make_ws(repo, home, debounce_ms=1000, debounce_max_ms=600_000)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    try:
        script = ("import os, sys\nroot = sys.argv[1]\nos.mkdir(root)\n"
                  "for i in range(10000):\n"
                  "    with open(os.path.join(root, f'f{i}.txt'), 'w') as f:\n"
                  "        f.write('x')\n")
        subprocess.run([sys.executable, "-c", script, str(repo / "burst")], check=True)
        calls = rec.wait_for(lambda c: bool(c), timeout=60)
        seg, changed = calls[0]
        assert "burst/ (10,000 files)" in part(seg, "tree").text
        assert "burst/ (10,000 files)" in part(seg, "git").text
        assert changed == ["tree", "git"]
        time.sleep(2.5)  # let any straggling batch arrive: there must be none
        assert len(rec.snapshot()) == 1
    finally:
        ws.stop()


def test_agent_gitignore_and_selected_files(repo, home):
    write(home, "AGENTS.md", "home rule one\n")
    write(repo, "debug.log", "ignored by *.log\n")
    ws = make_ws(repo, home)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    try:
        write(home, "AGENTS.md", "home rule two\n")  # outside the workspace, watched alone
        calls = rec.wait_for(latest_has("agentFiles", "home rule two"))
        assert calls[-1][1] == ["agentFiles"]

        assert "debug.log" not in part(ws.segment, "tree").text
        write(repo, ".gitignore", "build/\n")
        rec.wait_for(latest_has("tree", "debug.log"))

        write(repo, "README.md", "# Proj\n\nNew words.\n")
        calls = rec.wait_for(latest_has("files", "New words."))
        assert calls[-1][1] == ["files", "git"]
    finally:
        ws.stop()


def test_overflow_answered_with_full_rescan(repo, home, caplog, tmp_path):
    """A real kernel queue overflow: the reading thread is held while another process makes
    more events than the queue holds; the watcher then rescans everything."""
    # a change the watcher cannot see: a user config folder made later, whose nearest made
    # folder is further up than the watcher waits on (a config folder made later within
    # reach is watched for: test_watch_made_later.py)
    far = tmp_path / "far" / "a" / "b" / "c" / "ctxlayer"
    ws = Workspace(repo, WorkspaceConfig(), count, home=home, user_config_dir=far)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    limit = int(open("/proc/sys/fs/inotify/max_queued_events").read())
    try:
        write(far, "AGENTS.md", "config rule\n")
        script = ("import os, sys\n"
                  "for i in range(int(sys.argv[2])):\n"
                  "    open(os.path.join(sys.argv[1], f'o{i}.txt'), 'w').close()\n")
        with ws._watcher._debouncer._cond:  # the reader blocks on its first event
            subprocess.run([sys.executable, "-c", script, str(repo / "src"),
                            str(limit // 2 + 2000)], check=True)
        calls = rec.wait_for(latest_has("agentFiles", "config rule"), timeout=60)
        assert "agentFiles" in calls[-1][1]
        assert "inotify queue overflowed" in caplog.text  # the kernel's, not a big batch
    finally:
        ws.stop()


def test_watchdog_overflow_message_means_a_full_rescan(tmp_path):
    """Where watchdog's observer is the source (not Linux): its overflow is only a log line."""
    from ctxlayer.workspace.watcher import Watcher

    flushes = []
    watcher = Watcher([tmp_path], [], lambda batch, full: flushes.append(full),
                      lambda path: True, 0.05, 1.0)
    try:
        assert watcher.watch_count() is None
        logging.getLogger("watchdog.observers.inotify_c").warning(
            "Inotify queue overflowed; filesystem events were lost")
        deadline = time.monotonic() + 30
        while not flushes and time.monotonic() < deadline:
            time.sleep(0.02)
        assert flushes == [True]
    finally:
        watcher.stop()


def test_refresh_from_threads_while_watching_and_stop(repo, home):
    ws = make_ws(repo, home)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    errors: list[BaseException] = []

    def hammer():
        try:
            for _ in range(10):
                ws.refresh([repo / "src/app.py"])
        except BaseException as e:
            errors.append(e)

    try:
        threads = [threading.Thread(target=hammer) for _ in range(3)]
        for t in threads:
            t.start()
        write(repo, "src/app.py", "changed\n")
        for t in threads:
            t.join(timeout=60)
        rec.wait_for(latest_has("git", "M src/app.py"))
        assert not errors
        hashes = {seg.hash for seg, _ in rec.snapshot()}
        assert len(hashes) == len(rec.snapshot())  # no notification without a change
    finally:
        ws.stop()
    ws.stop()  # idempotent
    n = len(rec.snapshot())
    write(repo, "after_stop.txt")
    ws.refresh()  # refresh still works; no callback once stopped
    assert "after_stop.txt" in part(ws.segment, "tree").text
    assert len(rec.snapshot()) == n


def test_an_edit_of_the_file_a_symlink_points_to_is_seen(repo, home):
    """AGENTS.md -> docs/agents.md, README.md -> docs/body.md: an edit lands on the target,
    never on the link. The segment kept the old text for good while the git part changed,
    and a save of the target (refresh) did not help either; a link in the home folder that
    points into a folder nobody watched (~/dotfiles) is followed too."""
    write(repo, "docs/agents.md", "RULES V1\n")
    write(repo, "docs/body.md", "README BODY V1\n")
    (repo / "README.md").unlink()
    os.symlink("docs/body.md", repo / "README.md")
    os.symlink("docs/agents.md", repo / "AGENTS.md")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "links")
    write(home, "dotfiles/AGENTS.md", "HOME V1\n")
    os.symlink(home / "dotfiles" / "AGENTS.md", home / "AGENTS.md")
    ws = make_ws(repo, home)
    assert "RULES V1" in part(ws.scan(), "agentFiles").text
    assert ws.refresh([repo / "docs" / "agents.md"]) == []
    write(repo, "docs/agents.md", "RULES V2\n")  # as a save would report it
    assert "agentFiles" in ws.refresh([repo / "docs" / "agents.md"])
    assert "RULES V2" in part(ws.segment, "agentFiles").text
    rec = Recorder()
    ws.start_watching(rec)
    try:
        write(repo, "docs/agents.md", "RULES V3\n")
        rec.wait_for(latest_has("agentFiles", "RULES V3"))
        write(repo, "docs/body.md", "README BODY V2\n")
        rec.wait_for(latest_has("files", "README BODY V2"))
        write(home, "dotfiles/AGENTS.md", "HOME V2\n")
        rec.wait_for(latest_has("agentFiles", "HOME V2"))
        assert "README BODY V1" not in part(ws.segment, "files").text
    finally:
        ws.stop()


def test_a_link_chain_is_followed_through_every_hop_and_a_target_made_again(repo, home):
    """Only a used file's final target was known: the middle link of AGENTS.md -> docs/mid.md
    -> z.md pointed at y.md kept the old rules for good, a target deleted and made again was
    never seen again, and its folder moved away left the rules that were no longer on disk."""
    write(repo, "docs/z.md", "RULE Z\n")
    write(repo, "docs/y.md", "RULE Y\n")
    os.symlink("z.md", repo / "docs" / "mid.md")
    os.symlink("docs/mid.md", repo / "AGENTS.md")
    ws = make_ws(repo, home)
    assert "RULE Z" in part(ws.scan(), "agentFiles").text
    rec = Recorder()
    ws.start_watching(rec)
    try:
        (repo / "docs" / "mid.md").unlink()
        os.symlink("y.md", repo / "docs" / "mid.md")
        rec.wait_for(latest_has("agentFiles", "RULE Y"))
        (repo / "docs" / "y.md").unlink()
        rec.wait_for(latest_has("agentFiles", "RULE Y", present=False))
        write(repo, "docs/y.md", "RULE Y AGAIN\n")
        rec.wait_for(latest_has("agentFiles", "RULE Y AGAIN"))
        os.rename(repo / "docs", repo / "docs2")
        rec.wait_for(latest_has("agentFiles", "RULE Y", present=False))
    finally:
        ws.stop()


def test_an_upstream_set_later_is_shown(repo, home, tmp_path):
    """`git branch -u origin/main` writes .git/config alone, which was not watched: the
    Upstream line never came until another git event."""
    origin = tmp_path / "origin.git"
    git(repo, "clone", "-q", "--bare", str(repo), str(origin))
    git(repo, "remote", "add", "origin", str(origin))
    git(repo, "fetch", "-q", "origin")
    ws = make_ws(repo, home)
    assert "Upstream" not in part(ws.scan(), "git").text
    rec = Recorder()
    ws.start_watching(rec)
    try:
        git(repo, "branch", "-u", "origin/main")
        rec.wait_for(latest_has("git", "Upstream: origin/main"))
    finally:
        ws.stop()


def test_a_linked_worktree_sees_changes_to_refs_and_the_shared_exclude(repo, home, tmp_path):
    """A linked worktree's .git is a file: HEAD and its index are in .git/worktrees/<name>,
    but refs, packed-refs, config and info/exclude are in the shared .git, which was not
    watched: after `git reset --soft` the live part kept the old HEAD and a clean tree, and a
    pattern added to info/exclude left the file listed as untracked."""
    write(repo, "f.txt", "2\n")
    git(repo, "add", "f.txt")
    git(repo, "commit", "-qm", "two")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    write(linked, "secret.log.txt", "s\n")
    ws = make_ws(linked, home)
    assert "secret.log.txt" in part(ws.scan(), "git").text
    rec = Recorder()
    ws.start_watching(rec)
    try:
        git(linked, "reset", "-q", "--soft", "HEAD~1")  # moves refs/heads/side, nothing else
        sha = git(linked, "rev-parse", "--short=7", "HEAD").strip()
        rec.wait_for(lambda c: latest_has("git", f"HEAD: {sha}")(c)
                     and latest_has("git", "Staged (1):\n  A f.txt")(c))
        write(repo, ".git/info/exclude", "*.log.txt\n")
        rec.wait_for(lambda c: latest_has("git", "secret.log.txt", present=False)(c)
                     and latest_has("tree", "secret.log.txt", present=False)(c))
    finally:
        ws.stop()
