"""Folders made, ignored or relinked while the workspace is watched: what lies in them is
still seen. Each test drives a real Workspace with its watcher (inotify, folder by folder)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ws_helpers import count, has, make_ws, part, watching, write

from ctxlayer.config import WorkspaceConfig
from ctxlayer.workspace import Workspace
from ctxlayer.workspace.kept import KeptFolders

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="inotify is Linux's")


def test_an_agent_file_made_with_its_folder_is_read(repo, home, monkeypatch):
    """`mkdir .github` and its copilot-instructions.md at once (a checkout, a script): the
    file is written before the new folder has its watch, so the folder's own event is the
    only one. It was taken for a tree change alone and the agent file stayed out (4 trials
    in 5) though the tree listed it. The write is made to land in that gap here: while the
    watcher asks whether to keep the new folder, before it watches it."""
    keep = KeptFolders.keep
    github = repo / ".github"

    def keep_writing_first(self, path):
        if path == str(github) and not (github / "copilot-instructions.md").exists():
            write(repo, ".github/copilot-instructions.md", "Use tabs in Go code.\n")
        return keep(self, path)

    monkeypatch.setattr(KeptFolders, "keep", keep_writing_first)
    ws = make_ws(repo, home)
    with watching(ws) as rec:
        github.mkdir()
        rec.wait_for(has("tree", "copilot-instructions.md"))
        rec.wait_for(has("agentFiles", "Use tabs in Go code."), timeout=5)


def test_a_user_config_folder_made_after_the_start_is_watched(repo, home):
    """~/.config/ctxlayer made after the daemon started: only folders there at the start
    were watched, so its ctxlayer.toml and AGENTS.md were never read until a restart. The
    nearest folder above it is watched until it comes, then the folder itself."""
    configs: list[list[Path]] = []
    ws = make_ws(repo, home)
    assert not (home / ".config").exists()
    with watching(ws, configs.append) as rec:
        config_dir = home / ".config" / "ctxlayer"
        config_dir.mkdir(parents=True)  # both levels at once, the files at once after
        write(config_dir, "AGENTS.md", "User rule one.\n")
        write(config_dir, "ctxlayer.toml", "[workspace]\nfiles = [\"README*\"]\n")
        rec.wait_for(has("agentFiles", "User rule one."), timeout=5)
        rec.wait_for(lambda c: any(config_dir / "ctxlayer.toml" in paths
                                   for paths in configs), timeout=5)
        rec.wait_for(lambda c: str(config_dir) in ws.watched_folders())
        write(config_dir, "AGENTS.md", "User rule two.\n")  # through its own watch now
        rec.wait_for(has("agentFiles", "User rule two."), timeout=5)
        assert "User rule one." not in part(ws.segment, "agentFiles").text


def test_a_config_folder_made_one_level_at_a_time_is_followed(repo, home):
    configs: list[list[Path]] = []
    ws = make_ws(repo, home)
    with watching(ws, configs.append) as rec:
        (home / ".config").mkdir()
        rec.wait_for(lambda c: str(home / ".config") in ws.watched_folders())
        config_dir = home / ".config" / "ctxlayer"
        config_dir.mkdir()
        rec.wait_for(lambda c: str(config_dir) in ws.watched_folders())
        write(config_dir, "AGENTS.md", "Made late.\n")
        rec.wait_for(has("agentFiles", "Made late."), timeout=5)


def test_a_folder_of_the_chain_far_from_anything_made_is_not_waited_on(repo, tmp_path):
    """A config folder whose nearest made folder is more than AWAIT_LEVELS up is not waited
    on from there (the top of the disk would be watched for it)."""
    far = tmp_path / "a" / "b" / "c" / "d" / "ctxlayer"  # tmp_path is five levels up
    ws = Workspace(repo, WorkspaceConfig(), count, home=repo.parent, user_config_dir=far)
    with watching(ws):
        assert not any(f.startswith(str(tmp_path / "a")) for f in ws.watched_folders())
        assert str(tmp_path) not in ws.watched_folders()


def test_a_selected_file_named_in_an_ignored_folder_is_followed(repo, home):
    """`files = ["gen/out.md"]` with gen/ ignored: the file is read (named, not globbed),
    but only folders of files git lists were watched, so its edits, its deletion and its
    coming back were never seen until a restart."""
    write(repo, ".gitignore", "gen/\n")
    write(repo, "gen/out.md", "generated v1\n")
    write(repo, "gen/deeper/other.md", "not selected\n")
    ws = make_ws(repo, home, files=["README*", "gen/out.md"])
    with watching(ws) as rec:
        assert "generated v1" in part(ws.segment, "files").text
        assert str(repo / "gen") in ws.watched_folders()
        # the rest of the ignored folder still costs no watch
        assert str(repo / "gen" / "deeper") not in ws.watched_folders()
        write(repo, "gen/out.md", "generated v2\n")
        rec.wait_for(has("files", "generated v2"), timeout=5)
        (repo / "gen" / "out.md").unlink()
        rec.wait_for(has("files", "generated v", present=False), timeout=5)
        write(repo, "gen/out.md", "generated v3\n")
        rec.wait_for(has("files", "generated v3"), timeout=5)


def test_an_agent_file_whose_folder_becomes_ignored_is_still_followed(repo, home):
    """.github/ added to .gitignore after its copilot-instructions.md was read: the folder's
    watch was dropped with the others ignored, and the file's edits were never seen."""
    write(repo, ".github/copilot-instructions.md", "copilot v1\n")
    ws = make_ws(repo, home)
    with watching(ws) as rec:
        write(repo, ".gitignore", "build/\n*.log\n.github/\n")
        rec.wait_for(has("tree", ".github", present=False), timeout=5)
        write(repo, ".github/copilot-instructions.md", "copilot v2\n")
        rec.wait_for(has("agentFiles", "copilot v2"), timeout=5)
        assert str(repo / ".github") in ws.watched_folders()


def test_a_selected_file_named_later_in_an_ignored_folder_is_followed(repo, home):
    """The same when the name comes with a new setting (reconfigure), not at the start."""
    write(repo, ".gitignore", "gen/\n")
    write(repo, "gen/out.md", "generated v1\n")
    ws = make_ws(repo, home)
    with watching(ws) as rec:
        assert str(repo / "gen") not in ws.watched_folders()
        ws.reconfigure(WorkspaceConfig(files=["gen/out.md"]))
        assert "generated v1" in part(ws.segment, "files").text
        assert str(repo / "gen") in ws.watched_folders()
        write(repo, "gen/out.md", "generated v2\n")
        rec.wait_for(has("files", "generated v2"), timeout=5)


def test_the_users_ignore_file_made_after_the_start_is_followed(repo, home, tmp_path,
                                                                monkeypatch):
    """git's own default ignore file, $XDG_CONFIG_HOME/git/ignore, made while watched (its
    folder too): the tree went on listing what it ignores until an unrelated edit. Its folder
    is waited for from the config folder, watched alone: none of the config folder's other
    folders is watched."""
    config = tmp_path / "config"
    (config / "other-app" / "cache").mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    write(repo, "scratch/notes.txt", "n\n")
    ws = make_ws(repo, home)
    with watching(ws) as rec:
        assert "scratch" in part(ws.segment, "tree").text
        outside = {f for f in ws.watched_folders() if f.startswith(str(config))}
        assert outside == {str(config)}
        write(config, "git/ignore", "scratch/\n")
        rec.wait_for(has("tree", "scratch", present=False), timeout=10)
        assert str(config / "git") in ws.watched_folders()
        write(config, "git/ignore", "")  # through the folder's own watch now
        rec.wait_for(has("tree", "scratch"), timeout=10)
        outside = {f for f in ws.watched_folders() if f.startswith(str(config))}
        assert outside == {str(config), str(config / "git")}
