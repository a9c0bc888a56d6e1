"""The state folder is decided in one place, and right on each platform."""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest

from ctxlayer.paths import platform_state_dir, state_dir
from ctxlayer.store import state_dir as store_state_dir

HOME_POSIX = PurePosixPath("/home/ada")
HOME_MAC = PurePosixPath("/Users/ada")
HOME_WIN = PureWindowsPath(r"C:\Users\ada")


@pytest.mark.parametrize(("environ", "platform", "home", "expected"), [
    ({}, "linux", HOME_POSIX, PurePosixPath("/home/ada/.local/state/ctxlayer")),
    ({"XDG_STATE_HOME": "/var/st"}, "linux", HOME_POSIX, PurePosixPath("/var/st/ctxlayer")),
    ({"XDG_STATE_HOME": "relative"}, "linux", HOME_POSIX,
     PurePosixPath("/home/ada/.local/state/ctxlayer")),
    ({}, "freebsd14", HOME_POSIX, PurePosixPath("/home/ada/.local/state/ctxlayer")),
    ({"XDG_STATE_HOME": "/var/st"}, "darwin", HOME_MAC,
     PurePosixPath("/Users/ada/Library/Application Support/ctxlayer")),
    ({"LOCALAPPDATA": r"D:\Local"}, "win32", HOME_WIN, PureWindowsPath(r"D:\Local\ctxlayer")),
    ({}, "win32", HOME_WIN, PureWindowsPath(r"C:\Users\ada\AppData\Local\ctxlayer")),
    ({"CTXLAYER_STATE_DIR": r"E:\st", "LOCALAPPDATA": r"D:\Local"}, "win32", HOME_WIN,
     PureWindowsPath(r"E:\st")),
    ({"CTXLAYER_STATE_DIR": "/srv/ctx"}, "darwin", HOME_MAC, PurePosixPath("/srv/ctx")),
])
def test_each_platform_places_it_where_its_conventions_say(environ, platform, home, expected):
    assert platform_state_dir(environ, platform, home) == expected


def test_the_process_wide_answer_follows_the_environment(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("CTXLAYER_STATE_DIR", str(tmp_path / "st"))
    assert state_dir() == tmp_path / "st"
    assert store_state_dir() == state_dir()  # the store asks the same place
    assert state_dir(tmp_path / "given") == tmp_path / "given"
    monkeypatch.delenv("CTXLAYER_STATE_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr("sys.platform", "linux")
    assert state_dir() == tmp_path / "xdg" / "ctxlayer"
