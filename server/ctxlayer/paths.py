"""Where ctxlayer keeps its own files: the one place that decides the state folder.

Owns the state folder's location (the sessions database, the TCP token, the tokenizer cache
all live under it), correct on Linux and the BSDs, macOS and Windows. Order: an explicit
folder, then `CTXLAYER_STATE_DIR`, then the platform's own place for per-user state:
`$XDG_STATE_HOME/ctxlayer` (default `~/.local/state/ctxlayer`) on Linux and the BSDs,
`~/Library/Application Support/ctxlayer` on macOS, `%LOCALAPPDATA%\\ctxlayer` on Windows.
Computes paths only: creates nothing, reads no file.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

APP = "ctxlayer"


def state_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The state folder for this process (see the module docstring for the order)."""
    if explicit is not None:
        return Path(explicit)
    return Path(platform_state_dir(os.environ, sys.platform, Path.home()))


def platform_state_dir(environ: Mapping[str, str], platform: str, home: PurePath) -> PurePath:
    """The state folder as `platform` (a `sys.platform` value) places it, given that
    platform's environment and home folder: pure, so every platform can be checked anywhere."""
    if given := environ.get("CTXLAYER_STATE_DIR"):
        return _flavour(platform)(given)
    if platform == "win32":
        local = environ.get("LOCALAPPDATA")
        base = PureWindowsPath(local) if local else PureWindowsPath(home, "AppData", "Local")
        return base / APP
    if platform == "darwin":
        return PurePosixPath(home, "Library", "Application Support", APP)
    xdg = environ.get("XDG_STATE_HOME")
    # The XDG spec: a relative value is invalid and is ignored.
    if xdg and xdg.startswith("/"):
        return PurePosixPath(xdg, APP)
    return PurePosixPath(home, ".local", "state", APP)


def _flavour(platform: str) -> type[PurePath]:
    return PureWindowsPath if platform == "win32" else PurePosixPath
