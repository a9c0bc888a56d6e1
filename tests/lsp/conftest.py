"""Fixtures for the daemon's end-to-end tests: real git repositories, a fake home and state
dir, and the daemon spoken to over real stdio (pytest-lsp, or raw bytes for bad input).

git runs without the user's config; the daemon's HOME, XDG dirs and state dir point into a
temporary folder, so no test reads the user's own files.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from gitrepo import GIT_ENV, git, write

SERVE = [sys.executable, "-m", "ctxlayer", "serve"]


def hermetic_env(base: Path) -> dict[str, str]:
    """Environment for a daemon that sees only `base` (home, config, state)."""
    home = base / "home"
    for d in (home, base / "state", base / "config"):
        d.mkdir(parents=True, exist_ok=True)
    return {**os.environ, **GIT_ENV, "HOME": str(home), "XDG_CONFIG_HOME": str(base / "config"),
            "CTXLAYER_STATE_DIR": str(base / "state"), "PYTHONUNBUFFERED": "1"}


#: one fake world per test process, so module-scoped pytest-lsp fixtures can use it at import
WORLD = Path(tempfile.mkdtemp(prefix="ctxlayer-lsp-tests-"))
atexit.register(shutil.rmtree, WORLD, ignore_errors=True)
ENV = hermetic_env(WORLD)


def make_repo(root: Path) -> Path:
    """A committed repository on branch main with a README, an AGENTS.md and some code."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    write(root, "README.md", "# Demo\n\nA project for the daemon tests.\n")
    write(root, "AGENTS.md", "Run `make test` before committing.\n")
    write(root, "src/app.py", "def main():\n    print('hello')\n")
    write(root, ".gitignore", "*.log\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


class RawDaemon:
    """`ctxlayer serve` on real pipes, spoken to in bytes; responses collected by id."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.responses: dict[Any, dict] = {}
        self.unmatched: list[dict] = []  # responses with id null
        self.notifications: list[dict] = []
        self._arrived = asyncio.Event()
        self._pump = asyncio.ensure_future(self._read())

    @classmethod
    async def start(cls, *args: str, env: dict[str, str] | None = None,
                    stderr: Any = asyncio.subprocess.DEVNULL) -> RawDaemon:
        """``stderr``: where the daemon's log goes (a file a test reads after), else nowhere."""
        proc = await asyncio.create_subprocess_exec(
            *SERVE, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=stderr, env=env or ENV, limit=1 << 24)
        return cls(proc)

    async def _read(self) -> None:
        from ctxlayer_client.framing import read_message

        assert self.proc.stdout is not None
        while (msg := await read_message(self.proc.stdout)) is not None:
            if "method" in msg:
                self.notifications.append(msg)
            elif msg.get("id") is None:
                self.unmatched.append(msg)
            else:
                self.responses[msg["id"]] = msg
            self._arrived.set()

    async def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def send(self, message: Any) -> None:
        body = json.dumps(message).encode()
        await self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def response(self, msg_id: Any, timeout: float = 30.0) -> dict:
        async def wait() -> dict:
            while msg_id not in self.responses:
                self._arrived.clear()
                await self._arrived.wait()
            return self.responses.pop(msg_id)

        return await asyncio.wait_for(wait(), timeout)

    async def request(self, msg_id: Any, method: str, params: Any = None) -> dict:
        msg = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        await self.send(msg)
        return await self.response(msg_id)

    async def initialize(self, root: Path | None = None, **options: Any) -> dict:
        """The answer to `initialize` (``options``: its initializationOptions), then
        `initialized` sent."""
        params: dict[str, Any] = {"processId": None, "capabilities": {},
                                  "rootUri": root.as_uri() if root else None}
        if options:
            params["initializationOptions"] = options
        result = await self.request(0, "initialize", params)
        await self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return result

    async def shown(self, needle: str, timeout: float = 20.0) -> str:
        """The first message the daemon showed the user (window/showMessage) holding
        ``needle``, waited for."""
        async def wait() -> str:
            while True:
                for msg in self.notifications:
                    text = (msg.get("params") or {}).get("message", "")
                    if msg.get("method") == "window/showMessage" and needle in text:
                        return text
                self._arrived.clear()
                await self._arrived.wait()

        return await asyncio.wait_for(wait(), timeout)

    async def close(self) -> int:
        if self.proc.returncode is None:
            try:
                await self.request("bye", "shutdown")
                await self.send({"jsonrpc": "2.0", "method": "exit"})
                return await asyncio.wait_for(self.proc.wait(), 10)
            except (TimeoutError, ConnectionError):
                self.proc.kill()
        return await self.proc.wait()


def exchanges(count: int, words: int, last: str, sep: str = "_") -> list[dict]:
    """``count`` questions, each answered, of ``words`` distinct words apiece, then the
    question ``last``: a session's history in the openai format."""
    msgs = []
    for k in range(count):
        msgs.append({"role": "user", "content": f"Question {k}: "
                     + " ".join(f"q{k}{sep}{j}" for j in range(words))})
        msgs.append({"role": "assistant", "content": f"Answer {k}: "
                     + " ".join(f"a{k}{sep}{j}" for j in range(words))})
    return [*msgs, {"role": "user", "content": last}]


async def started(env: dict[str, str], root: Path, **options: Any) -> RawDaemon:
    """A daemon on ``env``'s state folder, initialized on ``root`` for gpt-4o with
    ``options`` (initializationOptions: contextWindow, ...)."""
    daemon = await RawDaemon.start(env=env)
    out = await daemon.initialize(root, model="gpt-4o", **options)
    assert "result" in out, out
    return daemon


#: ids of the requests `ask` and `result` send, unique in a test run
_asked = itertools.count()


async def ask(daemon: RawDaemon, method: str, params: dict) -> dict:
    """The answer to one request, under an id of its own."""
    return await daemon.request(f"r{next(_asked)}", method, params)


async def result(daemon: RawDaemon, method: str, params: dict) -> dict:
    """The result of one request, asserted to be one (the answer shown when it is not)."""
    out = await ask(daemon, method, params)
    assert "result" in out, out
    return out["result"]


@pytest.fixture
async def own_daemon(tmp_path: Path):
    """A daemon of its own (its own state folder and repository), which must end cleanly."""
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        await daemon.initialize(make_repo(tmp_path / "repo"))
        yield daemon
    finally:
        assert await daemon.close() == 0


@pytest.fixture
async def raw_daemon():
    daemon = await RawDaemon.start()
    await daemon.initialize()
    yield daemon
    await daemon.close()
