"""Fixtures for the workspace tests: real git repositories in tmp folders, a fake home.

git runs with no system or global config (author set through the environment), so the
tests never read the user's own git setup; the fake home keeps agent files hermetic.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ws_helpers import GIT_ENV, git, write


@pytest.fixture(autouse=True, scope="session")
def _hermetic_git():
    mp = pytest.MonkeyPatch()
    for key, value in GIT_ENV.items():
        mp.setenv(key, value)
    yield
    mp.undo()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def repo(home: Path) -> Path:
    """A committed git repository inside the fake home, on branch main."""
    root = home / "proj"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(root, "README.md", "# Proj\n\nA test project.\n")
    write(root, "src/app.py", "print('hi')\n")
    write(root, "src/util.py", "X = 1\n")
    write(root, ".gitignore", "build/\n*.log\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root
