"""Where the session database lives: one file per user in the platform's state folder.

Order: an explicit directory (constructor argument), then ``CTXLAYER_STATE_DIR``, then the
platform's state folder: ``$XDG_STATE_HOME/ctxlayer`` (default ``~/.local/state/ctxlayer``) on
Linux and BSDs, ``~/Library/Application Support/ctxlayer`` on macOS, ``%LOCALAPPDATA%\\ctxlayer``
on Windows.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DB_NAME = "sessions.sqlite3"


def state_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    if explicit is not None:
        return Path(explicit)
    env = os.environ.get("CTXLAYER_STATE_DIR")
    if env:
        return Path(env)
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "ctxlayer"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "ctxlayer"
    xdg = os.environ.get("XDG_STATE_HOME")
    return Path(xdg if xdg else Path.home() / ".local" / "state") / "ctxlayer"
