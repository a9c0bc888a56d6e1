"""ctxlayer_client when the daemon fails it: dies while a request is being written, stops
reading, never answers. Each failure is a clear error at once, never a hang or a bare OSError."""

from __future__ import annotations

import asyncio
import gc
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxlayer_client import AsyncClient, Client, ConnectionClosed

FAKE = str(Path(__file__).with_name("fake_daemon.py"))
BIG = "x" * 2_000_000  # far more than a pipe holds: writing it waits for the daemon to read


def fake(mode: str) -> list[str]:
    return [sys.executable, FAKE, mode]


async def test_a_daemon_dying_mid_write_is_connection_closed():
    loop = asyncio.get_running_loop()
    unhandled: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
    client = await AsyncClient.spawn(fake("dies-reading"), timeout=10)
    try:
        with pytest.raises(ConnectionClosed):
            await client.request("ctx/count", {"texts": [BIG]})
    finally:
        await client.close()
    gc.collect()  # a future whose exception nobody read is reported when it is collected
    await asyncio.sleep(0)
    assert [c.get("message") for c in unhandled] == []


async def test_the_timeout_covers_writing_the_request():
    client = await AsyncClient.spawn(fake("stops-reading"), timeout=30)
    try:
        with pytest.raises(TimeoutError, match=r"ctx/count: no answer within 1(\.0)?s"):
            await asyncio.wait_for(
                client.request("ctx/count", {"texts": [BIG]}, timeout=1), 10)
        # shutdown and exit are bounded too, then the process is killed
        assert await asyncio.wait_for(client.close(timeout=2), 10) is not None
    finally:
        if client.process is not None and client.process.returncode is None:
            client.process.kill()


def test_the_blocking_timeout_covers_writing_the_request():
    client = Client.spawn(fake("stops-reading"), timeout=1)
    try:
        with pytest.raises(TimeoutError, match="ctx/count: no answer within"):
            client.request("ctx/count", {"texts": [BIG]})
    finally:
        client.aio.process.kill()
        client.close()


async def test_a_typed_call_honours_its_own_timeout():
    client = await AsyncClient.spawn(fake("never-answers"), timeout=30)
    try:
        with pytest.raises(TimeoutError, match=r"ctx/count: no answer within 0\.5s"):
            await client.count(texts=["x"], timeout=0.5)
        with pytest.raises(TimeoutError, match=r"ctx/segment: no answer within 0\.5s"):
            await client.segment(timeout=0.5)
    finally:
        client.process.kill()
        await client.close(timeout=2)


def test_a_blocking_typed_call_honours_its_own_timeout():
    client = Client.spawn(fake("never-answers"), timeout=30)
    try:
        with pytest.raises(TimeoutError, match=r"ctx/trim: no answer within 0\.5s"):
            client.trim([], budget=10, timeout=0.5)
    finally:
        client.aio.process.kill()
        client.close()


@pytest.mark.parametrize("bad", [0, -1, "30", True])
async def test_a_timeout_that_is_not_seconds_above_zero_is_refused_naming_it(bad):
    # timeout=0 was taken for "the default" (30 s); a string failed deep in asyncio
    with pytest.raises(ValueError, match="timeout"):
        await AsyncClient.spawn(fake("never-answers"), timeout=bad)
    client = await AsyncClient.spawn(fake("never-answers"), timeout=30)
    try:
        with pytest.raises(ValueError, match="timeout: expected a number of seconds"):
            await client.count(texts=["x"], timeout=bad)
        assert not client._pending  # nothing was sent
    finally:
        await client.close(timeout=2)
    with pytest.raises(ValueError, match="timeout"):
        Client.spawn(fake("never-answers"), timeout=bad)


async def test_a_daemon_that_exits_before_initialize_says_why():
    # it said only "the daemon closed the connection": its stderr went to DEVNULL
    with pytest.raises(ConnectionClosed) as err:
        await AsyncClient.spawn([sys.executable, "-m", "ctxlayer", "serve", "--no-such-flag"],
                                timeout=30)
    assert str(err.value).startswith(
        "the daemon exited (code 2) before answering initialize: ctxlayer serve: "
        "unrecognized arguments: --no-such-flag")
    gone = [sys.executable, "-c", "import sys; sys.exit('ctxlayer: command not found')"]
    with pytest.raises(ConnectionClosed, match=r"exited \(code 1\) before answering "
                                               r"initialize: ctxlayer: command not found$"):
        Client.spawn(gone, timeout=30)


async def test_a_daemon_that_logs_much_is_not_held_by_its_stderr():
    # its stderr is read now (to say why it exited): unread, a full pipe would stop it
    client = await AsyncClient.spawn(fake("chatty"), timeout=10)
    try:
        assert client.server_info == {"name": "fake"}
    finally:
        assert await client.close(timeout=5) == 0
