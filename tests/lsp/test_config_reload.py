"""A workspace's ctxlayer.toml edited while the daemon runs: the daemon reads it again, says in
one message what changed or was rejected, and the workspace's policy follows it."""

from __future__ import annotations

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, write

pytestmark = pytest.mark.e2e


async def test_an_edited_config_is_reloaded_and_reported(tmp_path):
    root = make_repo(WORLD / "reload-repo")
    write(root, "ctxlayer.toml", '[session]\ndefault_mode = "short"\n')
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        init = await daemon.initialize(root)
        assert init["result"]["capabilities"]["experimental"]["ctxlayer"]["defaultMode"] == "short"
        await daemon.request("seg", "ctx/segment", {})  # the watcher runs
        first = await daemon.request("o1", "ctx/session/open", {})
        assert first["result"]["mode"] == "short"

        write(root, "ctxlayer.toml", '[session]\ndefault_mode = "debug"\nmax_rules = -4\n')
        text = await daemon.shown("reloaded")
        assert "session.default_mode \"short\" -> \"debug\"" in text
        assert "Rejected" in text and "max_rules" in text
        second = await daemon.request("o2", "ctx/session/open", {})
        assert second["result"]["mode"] == "debug"
    finally:
        assert await daemon.close() == 0
