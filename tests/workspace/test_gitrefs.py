"""GitPython's side of git: the repository found without a process, HEAD read from .git, and
events that touch only HEAD or local refs answered without running git."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ws_helpers import Recorder, git, make_ws, write

from ctxlayer.workspace import gitrefs, gitstate


def test_find_repo_at_the_top_in_a_subfolder_and_outside(repo, tmp_path):
    top = gitrefs.find_repo(repo)
    assert top == gitstate.Repo(repo, repo / ".git", "")
    sub = gitrefs.find_repo(repo / "src")
    assert sub == gitstate.Repo(repo, repo / ".git", "src/")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert gitrefs.find_repo(plain) is None
    assert gitrefs.find_repo(repo / ".git") is None
    assert gitrefs.find_repo(tmp_path / "missing") is None


def test_under_git_at_the_top_in_a_subfolder_a_worktree_and_outside(repo, tmp_path):
    assert gitrefs.under_git(repo) and gitrefs.under_git(repo / "src")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked), "-b", "side")
    assert (linked / ".git").is_file() and gitrefs.under_git(linked / "src")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert not gitrefs.under_git(plain) and not gitrefs.under_git(tmp_path / "missing")


def test_a_folder_outside_any_repository_is_scanned_without_gitpython_or_git(tmp_path):
    """GitPython takes a tenth of a second to import and git two processes: a folder no
    repository can hold needs neither (a fresh interpreter, as the first scan runs)."""
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.md").write_text("# notes\n")
    probe = (
        "import subprocess, sys\n"
        "from pathlib import Path\n"
        "ran = []\n"
        "real = subprocess.Popen.__init__\n"
        "def spy(self, args, *a, **k):\n"
        "    ran.append(args)\n"
        "    real(self, args, *a, **k)\n"
        "subprocess.Popen.__init__ = spy\n"
        "from ctxlayer.config import WorkspaceConfig\n"
        "from ctxlayer.core.tokens import WordTokenizer\n"
        "from ctxlayer.workspace import Workspace\n"
        f"root = Path({str(plain)!r})\n"
        "seg = Workspace(root, WorkspaceConfig(), WordTokenizer().count, home=root,\n"
        "                user_config_dir=root / 'config').scan()\n"
        "assert 'notes.md' in seg.text, seg.text\n"
        "print('git' in sys.modules, [a for a in ran if a and a[0] == 'git'])\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False []"


def test_find_repo_agrees_with_git_rev_parse_in_a_linked_worktree(repo, tmp_path):
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked), "-b", "side")
    found = gitrefs.find_repo(linked / "src")
    out = git(linked / "src", "rev-parse", "--show-toplevel", "--absolute-git-dir",
              "--show-prefix", "--path-format=absolute", "--git-common-dir").split("\n")
    assert found == gitstate.Repo(Path(out[0]), Path(out[1]), out[2], Path(out[3]))
    assert found.shared_dir == repo / ".git"
    assert gitrefs.read_head(linked).branch == "side"


def test_read_head_branch_detached_unborn_and_upstream(repo, tmp_path):
    oid = git(repo, "rev-parse", "HEAD").strip()
    assert gitrefs.read_head(repo) == gitrefs.Head(oid, "main", None)
    git(repo, "checkout", "-q", "--detach")
    assert gitrefs.read_head(repo) == gitrefs.Head(oid, None, None)
    git(repo, "checkout", "-q", "main")

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    assert gitrefs.read_head(clone) == gitrefs.Head(oid, "main", "origin/main")

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q", "-b", "trunk")
    assert gitrefs.read_head(fresh) == gitrefs.Head(None, "trunk", None)


def test_the_reading_agrees_with_the_cli_for_the_whole_state(repo):
    write(repo, "new.txt", "n\n")
    write(repo, "src/app.py", "changed\n")
    state = gitstate.read_state(repo, gitrefs.find_repo(repo))
    head = gitrefs.read_head(repo)
    assert (state.oid, state.branch, state.upstream) == (head.oid, head.branch, head.upstream)
    assert {e.path for e in state.entries} == {"new.txt", "src/app.py"}
    sub = gitstate.read_state(repo / "src", gitrefs.find_repo(repo / "src"))
    assert [e.path for e in sub.entries] == ["app.py"]  # the subfolder's view only


def test_a_new_branch_at_the_same_commit_runs_no_git(repo, home, monkeypatch):
    ws = make_ws(repo, home)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    spawned: list[list[str]] = []
    real_popen = subprocess.Popen

    class CountingPopen(real_popen):  # the stdlib's Popen, counted: nothing of ours replaced
        def __init__(self, args, *a, **kw):
            spawned.append(list(args))
            super().__init__(args, *a, **kw)

    try:
        # what `git switch -c feature` writes, done without a git process in this one
        (repo / ".git" / "refs" / "heads" / "feature").write_text(
            (repo / ".git" / "refs" / "heads" / "main").read_text()
            if (repo / ".git" / "refs" / "heads" / "main").exists()
            else git(repo, "rev-parse", "HEAD"))
        monkeypatch.setattr(gitstate.subprocess, "Popen", CountingPopen)
        (repo / ".git" / "HEAD").write_text("ref: refs/heads/feature\n")
        calls = rec.wait_for(lambda c: bool(c) and "Branch: feature" in next(
            p.text for p in c[-1][0].parts if p.name == "git"))
        assert calls[-1][1] == ["git"]
        assert spawned == []
        monkeypatch.setattr(gitstate.subprocess, "Popen", real_popen)

        write(repo, "src/app.py", "edited\n")  # a worktree change still runs git status
        rec.wait_for(lambda c: "M src/app.py" in next(
            p.text for p in c[-1][0].parts if p.name == "git"))
    finally:
        ws.stop()
