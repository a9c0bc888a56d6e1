"""`python -m ctxlayer.editor_settings` as a command: --help says what it does and writes
nothing, --check says whether the manifest is stale (exit 1) and writes nothing, and an
installed package, which has no manifest beside it, is told so in one line (exit 2). Before,
--help rewrote package.json, and an installed package ended in a FileNotFoundError traceback
for `<site-packages>/../editors/vscode/package.json`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from ctxlayer.editor_settings import MANIFEST, render_manifest

SERVER = Path(__file__).resolve().parents[2] / "server"


def run(*args: str, pythonpath: Path = SERVER, cwd: Path | None = None
        ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxlayer.editor_settings", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={"PYTHONPATH": str(pythonpath), "PATH": "/usr/bin:/bin"})


def stale_copy(tmp_path: Path) -> tuple[Path, str]:
    manifest = json.loads(MANIFEST.read_text())
    manifest["contributes"]["configuration"]["properties"]["ctxlayer.model"]["default"] = "old"
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    path = tmp_path / "package.json"
    path.write_text(text)
    return path, text


def test_help_says_what_it_does_and_writes_nothing(tmp_path):
    path, text = stale_copy(tmp_path)
    done = run("--help", "--manifest", str(path))
    assert done.returncode == 0, done.stderr
    assert "--check" in done.stdout and "package.json" in done.stdout
    assert path.read_text() == text


def test_check_tells_a_stale_manifest_and_writes_nothing(tmp_path):
    path, text = stale_copy(tmp_path)
    done = run("--check", "--manifest", str(path))
    assert done.returncode == 1
    assert "stale" in done.stderr and "Traceback" not in done.stderr
    assert path.read_text() == text
    assert run("--manifest", str(path)).returncode == 0  # rewritten
    assert path.read_text() == render_manifest(text) != text
    assert run("--check", "--manifest", str(path)).returncode == 0


def test_an_installed_package_is_told_it_has_no_manifest(tmp_path):
    site = tmp_path / "site-packages"
    shutil.copytree(SERVER / "ctxlayer", site / "ctxlayer",
                    ignore=shutil.ignore_patterns("__pycache__"))
    done = run(pythonpath=site, cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no VS Code manifest" in lines[0]
    assert "installed package" in lines[0]
    assert not (tmp_path / "editors").exists()


def test_a_file_that_is_no_manifest_is_said_in_one_line(tmp_path):
    path = tmp_path / "package.json"
    path.write_text('{"name": "x"}\n')
    done = run("--manifest", str(path))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert path.read_text() == '{"name": "x"}\n'
