"""Where ctxlayer keeps its own files: the one place that decides the user's folders.

Owns the state folder (the sessions database, the TCP token, the tokenizer cache all live
under it) and the user's config folder (its `ctxlayer.toml`), placed by `platformdirs` as each
platform's conventions say. The state folder: an explicit folder, then `CTXLAYER_STATE_DIR`
(either made absolute, `~` expanded), then platformdirs' per-user state folder:
`$XDG_STATE_HOME/ctxlayer` (default `~/.local/state/ctxlayer`; a relative value is ignored, as
the XDG spec says) on Linux and the BSDs, `~/Library/Application Support/ctxlayer` on macOS
(`$XDG_STATE_HOME/ctxlayer` when set), `%LOCALAPPDATA%\\ctxlayer` on Windows. The config
folder: `$XDG_CONFIG_HOME/ctxlayer` (default `~/.config/ctxlayer`) on Linux and the BSDs,
`~/Library/Application Support/ctxlayer` on macOS (`$XDG_CONFIG_HOME/ctxlayer` when set),
`%LOCALAPPDATA%\\ctxlayer` on Windows.
Computes paths only: creates nothing, reads no file (`named_absolute` asks whether $PWD is
the working folder).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from platformdirs.api import PlatformDirsABC

APP = "ctxlayer"


def user_dirs(platform: str | None = None) -> PlatformDirsABC:
    """platformdirs' folders of ctxlayer as `platform` (a `sys.platform` value, this one by
    default) places them, read from this process's environment."""
    platform = sys.platform if platform is None else platform
    if platform == "win32":
        from platformdirs.windows import Windows as Dirs
    elif platform == "darwin":
        from platformdirs.macos import MacOS as Dirs  # type: ignore[assignment]
    else:
        from platformdirs.unix import Unix as Dirs  # type: ignore[assignment]
    # no author folder on Windows, no version folder anywhere: one folder named ctxlayer
    return Dirs(APP, appauthor=False)


def state_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The state folder for this process (see the module docstring for the order), absolute:
    a relative one (`--state-dir .state`, `CTXLAYER_STATE_DIR=.state`) is taken from the folder
    ctxlayer started in, and a leading `~` is the home folder (a value quoted in a config
    file or an editor's settings reaches ctxlayer unexpanded). A relative folder was used as
    it was: a `~` folder made in the working folder, and the gateway's second start failed
    ("relative path can't be expressed as a file URI") once the database was there."""
    if explicit is not None:
        return _absolute(os.fspath(explicit))
    if given := os.environ.get("CTXLAYER_STATE_DIR"):
        return _absolute(given)
    return Path(user_dirs().user_state_dir)


def _absolute(named: str) -> Path:
    return named_absolute(Path(os.path.expanduser(named)))


def config_dir() -> Path:
    """The user's config folder (its `ctxlayer.toml` is read before the workspace's)."""
    return Path(user_dirs().user_config_dir)


def named_absolute(path: Path) -> Path:
    """`path` absolute without resolving it: a workspace folder as the user named it. A relative
    one (the default, '.') is taken from the shell's folder, $PWD, when that is the working
    folder: getcwd() gives its resolved form, and `ctxlayer prompt` run inside ~/work/proj
    (~/work a symlink) missed ~/work/AGENTS.md that `ctxlayer prompt ~/work/proj` read. The
    commands and the Python client name a workspace with it."""
    if path.is_absolute():
        return path
    pwd = os.environ.get("PWD", "")
    try:
        if os.path.isabs(pwd) and os.path.samefile(pwd, os.curdir):
            return Path(pwd) / path
    except OSError:  # $PWD names no folder (any more)
        pass
    return path.absolute()
