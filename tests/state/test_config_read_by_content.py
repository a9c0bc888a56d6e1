"""A reload of a workspace's configuration compares the files with what the configuration in
use was read from, by content: the same bytes apply nothing and say nothing (the check that
follows the watcher's start, a save that changed no byte), other bytes reload and say what
changed. A real State on a real folder, the user's config folder set through
XDG_CONFIG_HOME as the daemon finds it."""

from __future__ import annotations

from pathlib import Path

from ctxlayer import protocol
from ctxlayer.config import ConfigRead, default_user_config_dir, load_config
from ctxlayer.state import Caller, State
from ctxlayer.state.opening import open_workspace

MODEL = "gpt-4o"


async def opened(state: State, root: Path) -> Caller:
    caller = Caller(state, source="session", options=protocol.InitializationOptions(model=MODEL))
    caller.root = root
    seen: ConfigRead = {}
    caller.config, _ = load_config(root, default_user_config_dir(), seen=seen)
    open_workspace(caller, caller.config, config_read=seen)
    caller.live_decided.set()
    await caller.segment()  # the first scan, the watcher, and the check after it
    return caller


async def test_a_reload_applies_and_says_only_what_the_files_changed(state, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    user = tmp_path / "config" / "ctxlayer" / "ctxlayer.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[session]\ndefault_mode = "short"\n')
    root = tmp_path / "ws"
    root.mkdir()
    said: list[str] = []
    state.events.message_listeners.append(lambda ws, level, text: said.append(text))
    caller = await opened(state, root)
    live = caller.live
    assert live is not None and said == []  # nothing edited since initialize: nothing said
    assert live.workspace is not None
    live.workspace.stop()  # the test's own reloads only: the watcher's would race them
    config = live.config

    user.write_text('[session]\ndefault_mode = "short"\n')  # saved again, the same bytes
    assert await state.reload_config(live) is False
    assert said == [] and live.config is config

    user.write_text('# the mode\n[session]\ndefault_mode = "short"\n')  # other bytes
    assert await state.reload_config(live) is True
    assert said == ["ctxlayer.toml reloaded: no setting changed"]

    (root / "ctxlayer.toml").write_text('[session]\ndefault_mode = "debug"\n')
    assert await state.reload_config(live) is True
    assert said[1] == 'ctxlayer.toml reloaded: session.default_mode "short" -> "debug"'
    assert state.policy(caller.workspace).sessions.default_mode == "debug"
    assert await state.reload_config(live) is False and len(said) == 2


def test_a_read_of_the_configuration_says_what_each_file_held(tmp_path):
    root, user = tmp_path / "ws", tmp_path / "user"
    root.mkdir()
    (user / "ctxlayer.toml").mkdir(parents=True)  # a folder where the file would be
    (root / "ctxlayer.toml").write_bytes(b"[trim]\nhead_lines = 4\n")
    seen: ConfigRead = {}
    config, problems = load_config(root, user, seen=seen)
    assert config.trim.head_lines == 4
    reason = seen[str(user / "ctxlayer.toml")]
    assert isinstance(reason, str) and reason.startswith("cannot be read")
    assert problems == [f"{user / 'ctxlayer.toml'}: {reason}; ignored"]
    assert seen[str(root / "ctxlayer.toml")] == b"[trim]\nhead_lines = 4\n"

    (user / "ctxlayer.toml").rmdir()
    again: ConfigRead = {}
    load_config(root, user, seen=again)
    assert again == {str(user / "ctxlayer.toml"): None,
                     str(root / "ctxlayer.toml"): b"[trim]\nhead_lines = 4\n"}
