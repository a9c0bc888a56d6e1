"""What is edited between the daemon's reads at its start and the start of its watcher is not
lost: the configuration is read at `initialize`, the segment by the first scan, and the watcher
starts only after both. An edit in between was seen by nobody, and stayed lost until the next
edit (a probe saw it in 2 runs of 8, editing ctxlayer.toml right after `initialize`).

The gap is made certain, not timed: `git` on the daemon's PATH is a wrapper that, while a
gate file is there, holds the one git command the watcher's start runs before any watch
(`git config --path --get core.excludesFile`, workspace.py `_find_excludes`), after writing
a file that says it got there. The test edits then, lets it go, and waits with a deadline
for the effect."""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import RawDaemon, hermetic_env, make_repo
from gitrepo import write

pytestmark = pytest.mark.e2e

_ids = itertools.count(1)
#: seconds any one wait of these tests lasts at most
DEADLINE = 30.0


class Gate:
    """A `git` that holds the watcher's start while `gate` is there (see the docstring)."""

    def __init__(self, base: Path) -> None:
        real = shutil.which("git")
        assert real, "git is needed"
        self.bin, self.gate, self.reached = base / "bin", base / "gate", base / "reached"
        self.bin.mkdir(parents=True)
        self.gate.touch()
        wrapper = self.bin / "git"
        wrapper.write_text(
            "#!/bin/sh\n"
            'if [ "$*" = "config --path --get core.excludesFile" ] '
            f'&& [ -e "{self.gate}" ]; then\n'
            f'  : > "{self.reached}"\n'
            f'  while [ -e "{self.gate}" ]; do sleep 0.02; done\n'
            "fi\n"
            f'exec "{real}" "$@"\n')
        wrapper.chmod(0o755)

    def env(self, env: dict[str, str]) -> dict[str, str]:
        return {**env, "PATH": f"{self.bin}{os.pathsep}{env['PATH']}"}

    async def held(self) -> None:
        """Wait until the watcher's start is held: the scan is over, no watch is set yet."""
        await until(lambda: self.reached.exists(), "the watcher's start was never reached")

    def release(self) -> None:
        self.gate.unlink()


async def until(check: Callable[[], bool], failure: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    while not check():
        assert loop.time() < deadline, failure
        await asyncio.sleep(0.02)


async def answer_until(daemon: RawDaemon, method: str, params: dict,
                       check: Callable[[dict], bool]) -> dict:
    """The first result of `method` that passes `check`, asked again until the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    while True:
        out = await daemon.request(f"q{next(_ids)}", method, params)
        assert "result" in out, out
        if check(out["result"]):
            return out["result"]
        assert loop.time() < deadline, f"{method} never passed the check: {out['result']}"
        await asyncio.sleep(0.1)


def shown(daemon: RawDaemon, needle: str) -> list[str]:
    return [m["params"]["message"] for m in daemon.notifications
            if m.get("method") == "window/showMessage" and needle in m["params"]["message"]]


async def started(tmp_path: Path, user_toml: str | None = None,
                  workspace_toml: str | None = None) -> tuple[RawDaemon, Gate, Path, Path]:
    """A daemon on a new repository, initialized, its watcher's start held."""
    root = make_repo(tmp_path / "ws")
    if workspace_toml is not None:
        write(root, "ctxlayer.toml", workspace_toml)
    world = tmp_path / "world"
    env = hermetic_env(world)
    user_file = world / "config" / "ctxlayer" / "ctxlayer.toml"
    if user_toml is not None:
        write(user_file.parent, user_file.name, user_toml)
    gate = Gate(tmp_path / "gate")
    daemon = await RawDaemon.start(env=gate.env(env))
    await daemon.initialize(root)
    await gate.held()
    return daemon, gate, root, user_file


@pytest.mark.parametrize("which", ["user", "workspace"])
async def test_a_config_edited_before_the_watcher_starts_takes_effect(tmp_path, which):
    toml = '[session]\ndefault_mode = "short"\n'
    daemon, gate, root, user_file = await started(
        tmp_path, **{f"{which}_toml": toml})
    try:
        edited = user_file if which == "user" else root / "ctxlayer.toml"
        edited.write_text('[session]\ndefault_mode = "debug"\n')
        gate.release()
        opened = await answer_until(daemon, "ctx/session/open", {},
                                    lambda r: r["mode"] == "debug")
        assert opened["mode"] == "debug"
        said = shown(daemon, "reloaded")
        assert len(said) == 1 and 'session.default_mode "short" -> "debug"' in said[0], said
    finally:
        assert await daemon.close() == 0


async def test_an_agent_file_edited_before_the_watcher_starts_reaches_the_segment(tmp_path):
    daemon, gate, root, _ = await started(tmp_path)
    try:
        write(root, "AGENTS.md", "RULES EDITED BEFORE THE WATCHER\n")
        gate.release()
        segment = await answer_until(daemon, "ctx/segment", {},
                                     lambda s: "RULES EDITED BEFORE THE WATCHER" in s["text"])
        assert "make test" not in segment["text"]
    finally:
        assert await daemon.close() == 0


async def test_nothing_edited_before_the_watcher_starts_changes_nothing(tmp_path):
    """No reload, no message, no segment change: the check after the watcher's start
    compares what was read with the files, and they are the same."""
    daemon, gate, _, _ = await started(
        tmp_path, user_toml='[session]\ndefault_mode = "short"\n',
        workspace_toml="[workspace]\ntree_token_budget = 900\n")
    try:
        before = daemon.notifications[:]
        gate.release()
        # answered once the start is over, and the checks that follow it (a read of the
        # segment waits for them): whatever they said was sent before this answer
        segment = (await daemon.request("seg", "ctx/segment", {}))["result"]
        opened = (await daemon.request("open", "ctx/session/open", {}))["result"]
        assert opened["mode"] == "short"
        after = daemon.notifications[len(before):]
        assert not shown(daemon, "reloaded"), shown(daemon, "reloaded")
        assert [m for m in after if m.get("method") == "ctx/segmentChanged"] == []
        assert "make test" in segment["text"]
    finally:
        assert await daemon.close() == 0
