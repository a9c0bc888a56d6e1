"""The user's folders are decided in one place (platformdirs), and right on each platform."""

from __future__ import annotations

from pathlib import Path, PureWindowsPath

import platformdirs.windows
import pytest

from ctxlayer.config import default_user_config_dir
from ctxlayer.paths import config_dir, state_dir, user_dirs
from ctxlayer.store import state_dir as store_state_dir

HOME = "/home/ada"


@pytest.mark.parametrize(("environ", "platform", "state", "config"), [
    ({}, "linux", "/home/ada/.local/state/ctxlayer", "/home/ada/.config/ctxlayer"),
    ({"XDG_STATE_HOME": "/var/st", "XDG_CONFIG_HOME": "/var/cf"}, "linux",
     "/var/st/ctxlayer", "/var/cf/ctxlayer"),
    # the XDG spec: a relative value is invalid and is ignored
    ({"XDG_STATE_HOME": "relative", "XDG_CONFIG_HOME": "rel"}, "linux",
     "/home/ada/.local/state/ctxlayer", "/home/ada/.config/ctxlayer"),
    ({}, "freebsd14", "/home/ada/.local/state/ctxlayer", "/home/ada/.config/ctxlayer"),
    ({}, "darwin", "/home/ada/Library/Application Support/ctxlayer",
     "/home/ada/Library/Application Support/ctxlayer"),
    # platformdirs follows the XDG variables on macOS too when a user sets them
    ({"XDG_STATE_HOME": "/var/st"}, "darwin", "/var/st/ctxlayer",
     "/home/ada/Library/Application Support/ctxlayer"),
])
def test_each_platform_places_them_where_its_conventions_say(monkeypatch, environ, platform,
                                                             state, config):
    for name in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "CTXLAYER_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", HOME)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    dirs = user_dirs(platform)
    assert (dirs.user_state_dir, dirs.user_config_dir) == (state, config)


def test_windows_uses_local_appdata(monkeypatch):
    # Windows asks the shell for its folders; off Windows, ask the environment as its
    # fallback does, so the placement below the folder is what is checked here
    monkeypatch.setattr(platformdirs.windows, "get_win_folder",
                        platformdirs.windows.get_win_folder_from_env_vars)
    monkeypatch.setenv("LOCALAPPDATA", r"D:\Local")
    dirs = user_dirs("win32")
    assert PureWindowsPath(dirs.user_state_dir) == PureWindowsPath(r"D:\Local\ctxlayer")
    assert PureWindowsPath(dirs.user_config_dir) == PureWindowsPath(r"D:\Local\ctxlayer")


def test_the_process_wide_answer_follows_the_environment(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("CTXLAYER_STATE_DIR", str(tmp_path / "st"))
    assert state_dir() == tmp_path / "st"
    assert store_state_dir() == state_dir()  # the store asks the same place
    assert state_dir(tmp_path / "given") == tmp_path / "given"
    monkeypatch.delenv("CTXLAYER_STATE_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setattr("sys.platform", "linux")
    assert state_dir() == tmp_path / "xdg" / "ctxlayer"
    assert config_dir() == default_user_config_dir() == tmp_path / "cfg" / "ctxlayer"
