"""A read across lanes (`Lanes.read`) holds back what arrives after it in the lanes it reads,
and nothing else: another session's requests, and other reads, go on beside it. A list
(`holds=False`) holds back nothing: it waits for the requests before it only."""

from __future__ import annotations

import asyncio

from ctxlayer.state.lanes import Lanes


async def test_a_read_holds_back_the_lanes_it_reads_and_no_other():
    lanes, done = Lanes(), []
    reading = asyncio.Event()

    async def read(name: str, reads: set[str]) -> None:
        async with lanes.read(reads.__contains__):
            await reading.wait()
            done.append(name)

    async def write(key: str) -> None:
        async with lanes.turn(key):
            done.append(key)

    tasks = [asyncio.ensure_future(read("list", {"a", "b"})),
             asyncio.ensure_future(write("a")), asyncio.ensure_future(write("c")),
             asyncio.ensure_future(read("inspect", {"a"}))]
    await asyncio.sleep(0.05)
    assert done == ["c"], "the write to a waits for the read of a; c is read by none"
    reading.set()
    await asyncio.gather(*tasks)
    # the write to a after the list, then the read of a that came after the write
    assert done == ["c", "list", "a", "inspect"]


async def test_a_read_waits_for_the_writes_before_it_in_the_lanes_it_reads():
    lanes, done = Lanes(), []
    writing = asyncio.Event()

    async def write(key: str) -> None:
        async with lanes.turn(key):
            await writing.wait()
            done.append(key)

    async def read() -> None:
        async with lanes.read({"a"}.__contains__):
            done.append("read")

    tasks = [asyncio.ensure_future(write("a")), asyncio.ensure_future(write("b")),
             asyncio.ensure_future(read())]
    await asyncio.sleep(0.05)
    assert done == []
    writing.set()
    await asyncio.gather(*tasks)
    assert done.index("read") > done.index("a")


async def test_a_list_waits_for_a_slow_lane_and_holds_back_none():
    """A list that waits on session a's slow work: a request on b that arrives after it runs
    at once (it waited for the list, so for a: one session's summary stalled the workspace),
    and the list still answers after a's request before it."""
    lanes, done = Lanes(), []
    slow = asyncio.Event()

    async def write(key: str, wait: asyncio.Event | None = None) -> None:
        async with lanes.turn(key):
            if wait is not None:
                await wait.wait()
            done.append(key)

    async def listing() -> None:
        async with lanes.read({"a", "b"}.__contains__, holds=False):
            done.append("list")

    tasks = [asyncio.ensure_future(write("a", slow)), asyncio.ensure_future(listing()),
             asyncio.ensure_future(write("b"))]
    await asyncio.sleep(0.05)
    assert done == ["b"]
    slow.set()
    await asyncio.gather(*tasks)
    assert done == ["b", "a", "list"]
