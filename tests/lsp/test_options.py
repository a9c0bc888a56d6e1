"""A bad initialization option is reported and left out; the other options still apply."""

from __future__ import annotations

import asyncio

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo

pytestmark = pytest.mark.e2e


async def test_one_bad_option_does_not_drop_the_others(tmp_path):
    root = make_repo(WORLD / f"options-{tmp_path.name}")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        init = await daemon.request(0, "initialize", {
            "processId": None, "capabilities": {}, "rootUri": root.as_uri(),
            "initializationOptions": {"mode": "fast", "model": "claude-sonnet-4",
                                      "contextWindow": "big",
                                      "config": {"session": {"default_mode": "short"}}}})
        await daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        ours = init["result"]["capabilities"]["experimental"]["ctxlayer"]
        assert ours["model"] == "claude-sonnet-4"  # kept beside the two bad ones
        assert ours["defaultMode"] == "short"  # and so was the config

        async def shown() -> str:
            while True:
                for msg in daemon.notifications:
                    text = (msg.get("params") or {}).get("message", "")
                    if msg.get("method") == "window/showMessage" and "initializationOptions" in text:
                        return text
                daemon._arrived.clear()
                await daemon._arrived.wait()

        text = await asyncio.wait_for(shown(), 20)
        assert "initializationOptions.mode" in text and "initializationOptions.contextWindow" in text
    finally:
        assert await daemon.close() == 0
