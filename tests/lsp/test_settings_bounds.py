"""A number in the settings too large for what it feeds was taken without a word, and requests
failed later with -32603 and a traceback: `[session] keep_days = 1000000` failed every new
session's ctx/session/open ("date value out of range": no date lies that far back; 3e9 "Python
int too large to convert to C int"), and a reload with it logged only a traceback; a
`tree_token_budget` of 10**400 failed every request ("int too large to convert to float").
Each is now said once, naming its key, and its bound used (at first its default, which for
`keep_days` deleted the chats a value past the bound kept: review probe)."""

from __future__ import annotations

import pytest
from conftest import RawDaemon, hermetic_env, make_repo, result, write

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("table, key, value, bound", [
    ("session", "keep_days", "1000000", "36500"),
    ("session", "keep_days", "3000000000", "36500"),
    ("workspace", "tree_token_budget", "1" + "0" * 400, "9007199254740991"),
])
async def test_a_number_past_its_bound_is_said_and_its_bound_used(
        tmp_path, table, key, value, bound):
    root = make_repo(tmp_path / "repo")
    write(root, "ctxlayer.toml", f"[{table}]\n{key} = {value}\n")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        await daemon.initialize(root)
        shown = await daemon.shown(f"`{table}.{key}`")
        assert f"at most {bound}" in shown and f"using {bound}" in shown
        await result(daemon, "ctx/segment", {})
        opened = await result(daemon, "ctx/session/open", {"sessionId": "s"})
        await result(daemon, "ctx/session/append", {
            "sessionId": opened["sessionId"], "messages": [{"role": "user", "content": "hi"}]})
        await result(daemon, "ctx/assemble", {"sessionId": "s"})
    finally:
        assert await daemon.close() == 0


async def test_a_number_past_its_bound_on_reload_is_said_in_the_reload(tmp_path):
    root = make_repo(tmp_path / "repo")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/segment", {})  # the watcher runs
        write(root, "ctxlayer.toml", "[session]\nkeep_days = 1000000\nmax_rules = 3\n")
        shown = await daemon.shown("reloaded")
        assert "session.max_rules 12 -> 3" in shown
        assert "`session.keep_days`: at most 36500 (value 1000000); using 36500" in shown
        await result(daemon, "ctx/session/open", {"sessionId": "s"})
    finally:
        assert await daemon.close() == 0
