"""Fixtures for the gateway's tests (gateway_stack.py has the stack itself).

The user's own config and state are never read: XDG dirs and the state dir are temporary.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_stack import SMALL_WINDOW, Stack, small_stack, start_stack, stop_stack
from providers.standin import StandinThread


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("gateway-world")
    root = base / "workspace"
    root.mkdir()
    (root / "README.md").write_text("# a small project\n\nIt adds numbers.\n")
    (base / "config").mkdir()
    (base / "state").mkdir()
    return base


@pytest.fixture(scope="module")
def stack(world: Path) -> Iterator[Stack]:
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CONFIG_HOME", str(world / "config"))
    with StandinThread(windows=SMALL_WINDOW) as thread:
        gateway, state = start_stack(thread, world / "workspace", world / "state")
        try:
            yield Stack(thread, gateway, state)
        finally:
            stop_stack(thread, gateway, state)
            mp.undo()


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack where `standin-small` has a 4096-token window on both sides."""
    with small_stack(tmp_path_factory.mktemp("small")) as stack:
        yield stack


@pytest.fixture(autouse=True)
def _fresh_standin(request: pytest.FixtureRequest) -> None:
    if "stack" in request.fixturenames:
        request.getfixturevalue("stack").standin.reset()
