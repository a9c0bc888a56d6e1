"""The daemon's segment follows what its watcher sees, over stdio: the file a symlinked
AGENTS.md points to, and why a file is left out. Each waits for the condition with a
deadline; nothing here asserts elapsed time."""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
from collections.abc import Callable

from conftest import WORLD, RawDaemon, hermetic_env, make_repo
from gitrepo import git, write

_ids = itertools.count(100)


async def until(daemon: RawDaemon, method: str, check: Callable[[dict], bool],
                timeout: float = 30.0) -> dict:
    """The first answer to `method` that passes `check`, asked again until the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = (await daemon.request(next(_ids), method, {}))["result"]
        if check(result):
            return result
        assert loop.time() < deadline, f"{method} never passed the check: {result}"
        await asyncio.sleep(0.1)


def agent_reasons(segment: dict) -> list[str]:
    return [x["reason"] for x in segment.get("leftOut") or [] if x["part"] == "agentFiles"]


async def test_an_edit_of_a_symlinked_agent_file_reaches_the_prompt(tmp_path):
    """AGENTS.md -> docs/agents.md: the segment and ctx/systemPrompt kept RULES V1 for good
    after the target was edited and saved, while the git part changed."""
    root = make_repo(tmp_path / "ws")
    write(root, "docs/agents.md", "RULES V1\n")
    (root / "AGENTS.md").unlink()
    os.symlink("docs/agents.md", root / "AGENTS.md")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "link")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path))
    try:
        await daemon.initialize(root)
        await until(daemon, "ctx/segment", lambda s: "RULES V1" in s["text"])
        target = write(root, "docs/agents.md", "RULES V2\n")
        await daemon.send({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {
            "textDocument": {"uri": target.as_uri()}}})
        await until(daemon, "ctx/systemPrompt", lambda p: any(
            "RULES V2" in m["content"] for m in p["messages"]))
        segment = await until(daemon, "ctx/segment", lambda s: "RULES V2" in s["text"])
        assert "RULES V1" not in segment["text"]
    finally:
        await daemon.close()


async def test_left_out_says_the_current_reason(tmp_path):
    """AGENTS.md not UTF-8, then 300,000 characters: the text stays the same (no agent
    file), and the daemon went on saying 'not UTF-8 text'."""
    root = make_repo(tmp_path / "ws")
    (root / "AGENTS.md").write_bytes(b"caf\xe9 rules\n")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path))
    try:
        await daemon.initialize(root)
        await until(daemon, "ctx/segment", lambda s: agent_reasons(s) == ["not UTF-8 text"])
        (root / "AGENTS.md").write_text("x" * 300_000)
        segment = await until(daemon, "ctx/segment", lambda s: any(
            r.startswith("too long") for r in agent_reasons(s)))
        assert agent_reasons(segment) == [
            "too long: over 240,000 bytes, agent_file_max_chars 60,000"]
        (root / "AGENTS.md").unlink()
        await until(daemon, "ctx/segment", lambda s: agent_reasons(s) == [])
    finally:
        await daemon.close()


async def test_a_client_that_ends_during_the_first_scan_leaves_no_error(tmp_path):
    """The watcher was stopped (`workspace = None`) while the first scan ran; the scan then
    went on to start watching None: an ERROR and a traceback in the log of a clean exit. A
    git that takes its time holds the scan long enough for the client to go."""
    root = make_repo(WORLD / f"ends-early-{tmp_path.name}")
    slow = tmp_path / "bin"
    slow.mkdir()
    git_path = shutil.which("git")
    (slow / "git").write_text(f'#!/bin/sh\nsleep 0.5\nexec {git_path} "$@"\n')
    (slow / "git").chmod(0o755)
    env = hermetic_env(tmp_path / "world")
    env["PATH"] = f"{slow}{os.pathsep}{env['PATH']}"
    log_file = tmp_path / "daemon.log"
    daemon = await RawDaemon.start("--log-file", str(log_file), env=env)
    await daemon.initialize(root)
    # a live chat's turn, which needs no segment, answers while the scan goes on
    out = await daemon.request(1, "ctx/prepare", {"format": "openai", "request": {
        "model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}})
    assert "result" in out, out
    assert await daemon.close() == 0
    text = log_file.read_text()
    assert "Traceback" not in text and " ERROR " not in text, text


def agent_titles(segment: dict) -> list[str]:
    """The agent files the agentFiles part holds, by the paths their titles show."""
    part = next(p for p in segment["parts"] if p["name"] == "agentFiles")
    return [line[3:] for line in part["text"].splitlines() if line.startswith("## ")]


async def test_the_agent_files_on_the_way_through_a_symlinked_folder_are_read_and_followed(
        tmp_path):
    """~/work a symlink to another disk, the workspace ~/work/proj: the daemon resolved the
    folder to the other disk, which is not below home, and passed over ~/work/AGENTS.md
    without a word (in the segment: the home's file and the workspace's only)."""
    env = hermetic_env(tmp_path)
    home = tmp_path / "home"
    write(home, "AGENTS.md", "HOME RULE\n")
    disk = tmp_path / "otherdisk" / "work"
    disk.mkdir(parents=True)
    os.symlink(disk, home / "work")
    write(home, "work/AGENTS.md", "WORK RULE V1\n")
    make_repo(disk / "proj")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(home / "work" / "proj")
        segment = await until(daemon, "ctx/segment", lambda s: "WORK RULE V1" in s["text"])
        assert agent_titles(segment) == ["~/AGENTS.md", "~/work/AGENTS.md", "AGENTS.md"]
        # the watcher sees the file on the way too: no save, no other event
        write(home, "work/AGENTS.md", "WORK RULE V2\n")
        segment = await until(daemon, "ctx/segment", lambda s: "WORK RULE V2" in s["text"])
        assert "WORK RULE V1" not in segment["text"]
        assert any(n.get("method") == "ctx/segmentChanged" for n in daemon.notifications)
    finally:
        await daemon.close()


async def test_a_workspace_named_with_dotdot_after_a_symlink_opens_the_folder_it_leads_to(
        tmp_path):
    """~/link -> disk/a/b, the workspace named ~/link/../proj: the system leads it to
    disk/a/proj. The daemon folded the `..` by the text first, to ~/proj: another project's
    segment (or none at all where ~/proj does not exist), without a word."""
    env = hermetic_env(tmp_path)
    disk = tmp_path / "disk"
    (disk / "a" / "b").mkdir(parents=True)
    write(make_repo(disk / "a" / "proj"), "README.md", "# THE REAL PROJECT\n")
    write(make_repo(tmp_path / "home" / "proj"), "README.md", "# ANOTHER PROJECT\n")
    os.symlink(disk / "a" / "b", tmp_path / "home" / "link")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(tmp_path / "home" / "link" / ".." / "proj")
        segment = await until(daemon, "ctx/segment", lambda s: s["tokens"] > 0)
        assert "THE REAL PROJECT" in segment["text"]
        assert "ANOTHER PROJECT" not in segment["text"]
    finally:
        await daemon.close()


async def test_the_agent_files_below_a_symlinked_home_are_read(tmp_path):
    """HOME a symlink to the real home folder, the workspace opened by its real path: the
    workspace was not below home as HOME names it, and ~/team/AGENTS.md was passed over."""
    env = hermetic_env(tmp_path)
    real = tmp_path / "realhome"
    write(real, "AGENTS.md", "HOME RULE\n")
    write(real, "team/AGENTS.md", "TEAM RULE\n")
    root = make_repo(real / "team" / "proj")
    os.symlink(real, tmp_path / "linkhome")
    env["HOME"] = str(tmp_path / "linkhome")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        segment = await until(daemon, "ctx/segment", lambda s: "TEAM RULE" in s["text"])
        assert agent_titles(segment) == ["~/AGENTS.md", "~/team/AGENTS.md", "AGENTS.md"]
    finally:
        await daemon.close()


def tree_of(segment: dict) -> str:
    return next(p for p in segment["parts"] if p["name"] == "tree")["text"]


async def test_an_edit_of_the_users_own_ignore_file_reaches_the_segment(tmp_path):
    """build/ added to $XDG_CONFIG_HOME/git/ignore (git's default core.excludesFile): 5 s later
    the tree still listed build/ and no ctx/segmentChanged came, where a fresh scan had it
    gone; a .gitignore edit refreshes. Then core.excludesFile set in the repository to a link
    into a dotfiles folder: an edit of the link's target is seen too."""
    env = hermetic_env(tmp_path)
    root = make_repo(tmp_path / "ws")
    write(root, "build/out.o", "x")
    write(root, "dist/app.js", "x")
    ignore = write(tmp_path / "config", "git/ignore", "")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await until(daemon, "ctx/segment", lambda s: "build" in tree_of(s))
        daemon.notifications.clear()
        ignore.write_text("build/\n")
        segment = await until(daemon, "ctx/segment", lambda s: "build" not in tree_of(s))
        assert "build/" not in segment["text"] and "dist" in tree_of(segment)
        assert any(n.get("method") == "ctx/segmentChanged" for n in daemon.notifications)
        # git's config named the file at the start: the daemon follows the one it named
        dotfiles = write(tmp_path / "dotfiles", "gitignore", "")
        os.symlink(dotfiles, tmp_path / "config" / "git" / "my-ignore")
        git(root, "config", "core.excludesFile", str(tmp_path / "config/git/my-ignore"))
    finally:
        await daemon.close()
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await until(daemon, "ctx/segment", lambda s: "dist" in tree_of(s))
        dotfiles.write_text("dist/\n")
        await until(daemon, "ctx/segment", lambda s: "dist" not in tree_of(s))
    finally:
        await daemon.close()


async def test_a_save_named_through_the_symlink_the_workspace_was_opened_by_refreshes(tmp_path):
    """The workspace opened as ~/work/proj, ~/work a symlink: the editor's didSave names the
    file that way, which is not below the resolved root, and the save refreshed nothing (the
    watcher is held back here for a minute, so only the save can)."""
    env = hermetic_env(tmp_path)
    disk = tmp_path / "otherdisk"
    make_repo(disk / "proj")
    os.symlink(disk, tmp_path / "home" / "work")
    named = tmp_path / "home" / "work" / "proj"
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.request(0, "initialize", {
            "processId": None, "capabilities": {}, "rootUri": named.as_uri(),
            "initializationOptions": {"config": {"workspace": {
                "debounce_ms": 60_000, "debounce_max_ms": 600_000}}}})
        await daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        await until(daemon, "ctx/segment", lambda s: "make test" in s["text"])
        saved = write(named, "AGENTS.md", "Run `make check` instead.\n")
        await daemon.send({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {
            "textDocument": {"uri": saved.as_uri()}}})
        await until(daemon, "ctx/segment", lambda s: "make check" in s["text"], timeout=15)
    finally:
        await daemon.close()
