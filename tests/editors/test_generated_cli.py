"""The commands that rewrite a file of the checkout from the daemon's values (`python -m
ctxlayer.config`, `ctxlayer.editor_settings`, `ctxlayer.editor_secrets`): --help says what
it does and writes nothing, --check says whether the file is stale (exit 1) and writes
nothing, and an installed package, which has no checkout beside it, is told so in one line
(exit 2). Before, --help rewrote the file (of all three) and an installed package ended in a
FileNotFoundError traceback for `<site-packages>/../docs/settings.md` and the like."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxlayer.config import settings_doc
from ctxlayer.editor_secrets import OUTPUT
from ctxlayer.editor_secrets import render as secret_rule
from ctxlayer.editor_settings import MANIFEST, render_manifest
from ctxlayer.generated import CHECKOUT

SERVER = CHECKOUT / "server"


def _stale_manifest() -> str:
    manifest = json.loads(MANIFEST.read_text())
    manifest["contributes"]["configuration"]["properties"]["ctxlayer.model"]["default"] = "old"
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


#: each command, its file's name, a stale text of it and what it renders that text to
COMMANDS = {
    "ctxlayer.config": ("settings.md", lambda: "# old\n" + settings_doc(),
                        lambda _text: settings_doc()),
    "ctxlayer.editor_settings": ("package.json", _stale_manifest, render_manifest),
    "ctxlayer.editor_secrets": (OUTPUT.name, lambda: "// old\n" + secret_rule(),
                                lambda _text: secret_rule()),
}


def run(module: str, *args: str, pythonpath: Path = SERVER, cwd: Path | None = None
        ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={"PYTHONPATH": str(pythonpath), "PATH": "/usr/bin:/bin"})


def stale_copy(module: str, tmp_path: Path) -> tuple[Path, str]:
    name, stale, _ = COMMANDS[module]
    path = tmp_path / name
    text = stale()
    path.write_text(text)
    return path, text


@pytest.mark.parametrize("module", COMMANDS)
def test_help_says_what_it_does_and_writes_nothing(module, tmp_path):
    path, text = stale_copy(module, tmp_path)
    done = run(module, "--help", "--file", str(path))
    assert done.returncode == 0, done.stderr
    assert "--check" in done.stdout and COMMANDS[module][0] in done.stdout
    assert path.read_text() == text


@pytest.mark.parametrize("module", COMMANDS)
def test_check_tells_a_stale_file_and_writes_nothing(module, tmp_path):
    path, text = stale_copy(module, tmp_path)
    done = run(module, "--check", "--file", str(path))
    assert done.returncode == 1
    assert "stale" in done.stderr and "Traceback" not in done.stderr
    assert path.read_text() == text
    assert run(module, "--file", str(path)).returncode == 0  # rewritten
    assert path.read_text() == COMMANDS[module][2](text) != text
    assert run(module, "--check", "--file", str(path)).returncode == 0


@pytest.mark.parametrize("module", COMMANDS)
def test_an_installed_package_is_told_it_has_no_checkout(module, tmp_path):
    site = tmp_path / "site-packages"
    shutil.copytree(SERVER / "ctxlayer", site / "ctxlayer",
                    ignore=shutil.ignore_patterns("__pycache__"))
    done = run(module, pythonpath=site, cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"python -m {module}: no ")
    assert "installed package" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site-packages"]


def test_a_file_that_is_no_manifest_is_said_in_one_line(tmp_path):
    path = tmp_path / "package.json"
    path.write_text('{"name": "x"}\n')
    done = run("ctxlayer.editor_settings", "--file", str(path))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert path.read_text() == '{"name": "x"}\n'
