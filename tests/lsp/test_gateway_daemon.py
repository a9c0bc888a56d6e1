"""`ctxlayer serve` with `[gateway] enabled`: the initialize answer announces the gateway's
URLs, a chat through them reaches the stand-in provider fitted, and the editor attached to the
daemon hears the live chat's budget (`ctx/budgetChanged` with its conversationId)."""

from __future__ import annotations

import asyncio

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo
from providers.standin import Standin

pytestmark = pytest.mark.e2e


async def test_the_daemon_runs_the_gateway_and_pushes_the_live_chat(tmp_path):
    import openai

    async with Standin() as upstream:
        root = make_repo(WORLD / f"daemon-gateway-{tmp_path.name}")
        daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
        try:
            init = await daemon.request(0, "initialize", {
                "processId": None, "capabilities": {}, "rootUri": root.as_uri(),
                "initializationOptions": {"config": {"gateway": {
                    "enabled": True, "openai_base_url": upstream.openai}}}})
            await daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            urls = init["result"]["capabilities"]["experimental"]["ctxlayer"]["gateway"]
            assert urls["openai"].startswith("http://127.0.0.1:") and urls["openai"].endswith("/v1")
            client = openai.AsyncOpenAI(base_url=urls["openai"], api_key="sk-test", max_retries=0)
            reply = await client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "hello through ctxlayer"}])
            assert reply.choices[0].message.content
            assert upstream.received[-1]["body"]["messages"][-1]["content"] == \
                "hello through ctxlayer"

            async def live_budget() -> dict:
                while True:
                    for msg in daemon.notifications:
                        params = msg.get("params") or {}
                        if msg.get("method") == "ctx/budgetChanged" and params.get("conversationId"):
                            return params
                    daemon._arrived.clear()
                    await daemon._arrived.wait()

            budget = await asyncio.wait_for(live_budget(), 20)
            assert budget["source"] == "gateway" and budget["used"] > 0
            await client.close()
        finally:
            assert await daemon.close() == 0
