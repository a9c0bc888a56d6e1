"""What `pip install /path/to/ctxlayer` installs (the README's way): the wheel holds every file
of the package, data files included, and the installed command runs the README's first one."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: where the packages live in the checkout (pyproject's packages.find)
SOURCES = ("server", "clients/python")


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "pyproject.toml", "README.md", "LICENSE",
                          *SOURCES], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.split()


def _wheel(tmp_path: Path) -> Path:
    """The wheel, built offline from a copy of the tracked files (the checkout stays clean)."""
    copy = tmp_path / "src"
    for name in _tracked():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp_path / "dist"), str(copy)],
                   check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("ctxlayer-*.whl")
    return wheel


def test_the_wheel_holds_every_file_of_the_package_and_its_demo_runs(tmp_path):
    wheel = _wheel(tmp_path)
    held = set(zipfile.ZipFile(wheel).namelist())
    package_files = [name.split("/", 2)[-1] if name.startswith("clients/") else
                     name.split("/", 1)[1] for name in _tracked()
                     if name.startswith(SOURCES)]
    assert package_files and [f for f in package_files if f not in held] == []
    installed = tmp_path / "installed"
    zipfile.ZipFile(wheel).extractall(installed)
    done = subprocess.run(
        [sys.executable, "-c", "import sys, ctxlayer\n"
         f"assert ctxlayer.__file__.startswith({str(installed)!r}), ctxlayer.__file__\n"
         "from ctxlayer.cli import main\nsys.exit(main(['demo']))"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
             "XDG_CONFIG_HOME": str(tmp_path / "config")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "8,000" in done.stdout or "8000" in done.stdout, done.stdout[-2000:]
