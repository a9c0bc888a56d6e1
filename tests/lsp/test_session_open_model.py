"""ctx/session/open refuses an empty model naming the field, as ctx/session/configure does.

Before: `"model": ""` opened the session with gpt-4o (the daemon's default) and said nothing,
while configure refused the same value naming `model`. The real daemon over stdio."""

from __future__ import annotations

import itertools

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo

pytestmark = pytest.mark.e2e
_worlds = itertools.count()


@pytest.mark.parametrize("model", ["", "   "])
async def test_an_empty_model_is_refused_naming_it_and_opens_nothing(model):
    base = WORLD / f"open-model-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        out = await daemon.request("o1", "ctx/session/open",
                                   {"sessionId": "s", "model": model, "budget": 20000})
        assert out.get("error", {}).get("code") == -32602, out
        assert "model" in out["error"]["message"], out
        listed = await daemon.request("l1", "ctx/session/list", {})
        assert listed["result"]["sessions"] == [], listed
        opened = await daemon.request("o2", "ctx/session/open",
                                      {"sessionId": "s", "model": "claude-sonnet-4"})
        assert opened["result"]["model"] == "claude-sonnet-4", opened
    finally:
        assert await daemon.close() == 0
