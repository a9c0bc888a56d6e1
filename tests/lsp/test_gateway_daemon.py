"""`ctxlayer serve` with `[gateway] enabled`: the initialize answer announces the gateway's
URLs, a chat through them reaches the stand-in provider fitted, and the editor attached to the
daemon hears the live chat's budget (`ctx/budgetChanged` with its conversationId)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo
from providers.standin import Standin

pytestmark = pytest.mark.e2e


async def with_gateway(daemon: RawDaemon, root: Path, upstream: dict[str, str]) -> dict:
    """Initialize ``daemon`` on ``root`` with its gateway on (its upstreams ``upstream``, as
    `[gateway]` names them): the gateway's URLs, as the daemon announces them."""
    init = await daemon.request(0, "initialize", {
        "processId": None, "capabilities": {}, "rootUri": root.as_uri(),
        "initializationOptions": {"config": {"gateway": {"enabled": True, **upstream}}}})
    await daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return init["result"]["capabilities"]["experimental"]["ctxlayer"]["gateway"]


async def test_the_daemon_runs_the_gateway_and_pushes_the_live_chat(tmp_path):
    import openai

    async with Standin() as upstream:
        root = make_repo(WORLD / f"daemon-gateway-{tmp_path.name}")
        daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
        try:
            urls = await with_gateway(daemon, root, {"openai_base_url": upstream.openai})
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


async def test_the_daemons_gateway_never_logs_a_key_its_parser_refused(tmp_path):
    """A header line aiohttp's parser refuses (a key read from a CRLF file) is said in one line
    in the daemon's log, at -vvv too, and never reaches an editor's log window: aiohttp logged a
    traceback quoting the line, key and all."""
    key = "sk-ant-api03-DAEMONNEVERLOGS"
    root = make_repo(WORLD / f"daemon-gateway-refused-{tmp_path.name}")
    log_file = tmp_path / "daemon.log"
    daemon = await RawDaemon.start("--log-file", str(log_file), "-vvv",
                                   env=hermetic_env(tmp_path / "world"))
    try:
        base = (await with_gateway(daemon, root, {
            "anthropic_base_url": "http://127.0.0.1:9"}))["anthropic"]
        host, port = base.removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(f"POST /v1/messages HTTP/1.1\r\nHost: {host}:{port}\r\n"
                     f"x-api-key: {key}\r\r\nContent-Length: 2\r\n\r\n{{}}".encode())
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 400 ")  # the HTTP spoken, not aiohttp's 1.0
    finally:
        assert await daemon.close() == 0
    log = log_file.read_text()
    assert key not in log and "Traceback" not in log
    assert "refused a request the HTTP parser could not read: " in log
    assert key not in json.dumps(daemon.notifications)


async def test_the_daemons_gateway_shares_the_workspace_opened_through_a_symlink(tmp_path):
    """The workspace opened by a name through a symlink (~/work/proj, ~/work on another disk)
    is one live workspace, the editor's and the gateway's alike: not a second one scanning
    and watching the same tree because the gateway's caller knew only the resolved root."""
    root = make_repo(WORLD / f"daemon-gateway-link-{tmp_path.name}" / "proj")
    link = tmp_path / "work"
    link.symlink_to(root.parent)
    log_file = tmp_path / "daemon.log"
    daemon = await RawDaemon.start("--log-file", str(log_file), "-vv",
                                   env=hermetic_env(tmp_path / "world"))
    try:
        await with_gateway(daemon, link / "proj", {"openai_base_url": "http://127.0.0.1:9/v1"})
        assert "result" in await daemon.request(1, "ctx/segment", {})
    finally:
        assert await daemon.close() == 0
    scans = [line for line in log_file.read_text().splitlines()
             if f"workspace {root}: " in line and " tokens, hash " in line]
    assert len(scans) == 1, scans


async def _stream_lines(url: str, body: dict, opened: asyncio.Event) -> list[str]:
    """The lines of a streamed answer as its client reads them (`opened` once the first came),
    ending with how it ended: "closed" (the server ended it), or "cut" and why."""
    import httpx2 as httpx

    lines: list[str] = []
    try:
        async with httpx.AsyncClient(timeout=60) as client, client.stream(
                "POST", url, json=body, headers={"Authorization": "Bearer sk-test"}) as resp:
            lines.append(f"status {resp.status_code}")
            async for line in resp.aiter_lines():
                if line:
                    lines.append(line)
                    opened.set()
        lines.append("closed")
    except httpx.HTTPError as exc:
        lines.append(f"cut: {exc!r}")
    opened.set()
    return lines


async def test_the_daemons_exit_stops_its_gateway_and_takes_its_announcement(tmp_path):
    """shutdown + exit of `ctxlayer serve` never stopped the gateway it ran: gateway.json
    still named the dead process (`ctxlayer chats`: "the gateway does not answer"), and a
    stream under way was cut without a word. Now the daemon stops its gateway as `ctxlayer
    gateway` stops: the stream ends with its provider's error event, the announcement goes."""
    world = tmp_path / "world"
    env = hermetic_env(world)
    announced = world / "state" / "gateway.json"
    async with Standin() as upstream:
        root = make_repo(WORLD / f"daemon-gateway-stop-{tmp_path.name}")
        daemon = await RawDaemon.start(env=env)
        try:
            urls = await with_gateway(daemon, root, {"openai_base_url": upstream.openai})
            assert json.loads(announced.read_text())["pid"] == daemon.proc.pid
            upstream.fail(mode="stall")  # the stream's first event, then nothing
            opened = asyncio.Event()
            stream = asyncio.ensure_future(_stream_lines(
                f"{urls['openai']}/chat/completions", {"model": "gpt-4o", "stream": True,
                "messages": [{"role": "user", "content": "hello"}]}, opened))
            await asyncio.wait_for(opened.wait(), 30)
        finally:
            code = await daemon.close()
        lines = await asyncio.wait_for(stream, 30)
    assert code == 0
    assert lines[0] == "status 200" and lines[-1] == "closed", lines
    assert json.loads(lines[-2].removeprefix("data: "))["error"]["code"] == "gateway_stopping"
    assert not announced.exists()
    chats = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ctxlayer", "chats", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(chats.communicate(), 60)
    assert chats.returncode == 2 and b"no gateway is running" in out + err, out + err
