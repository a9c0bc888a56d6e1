"""A body takes room as its bytes come, never for the length its client declares: 40 sockets
that each declared 32 MiB and sent one byte held 1 GB of the gateway's memory (the probe's
`rss` went from 127 MB to 1059 MB), for as long as they trickled. Measured by what Python
allocated while reading (tracemalloc), not by time."""

from __future__ import annotations

import tracemalloc

import msgspec

from ctxlayer.config import GatewayConfig
from ctxlayer.gateway import limits


class Trickle:
    """A request's body stream: the chunks given, then its end."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def readany(self) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""


class Declared:
    """What read_body reads of an aiohttp request: its app's limits, the declared length and
    the body stream."""

    def __init__(self, declared: int, chunks: list[bytes]) -> None:
        config = msgspec.structs.replace(GatewayConfig(), max_body_mb=64)
        self.app = {limits.KEY: limits.BodyLimits(config)}
        self.content_length = declared
        self.content = Trickle(chunks)


async def test_a_declared_length_takes_no_room_before_its_bytes_come():
    tracemalloc.start()
    try:
        body = await limits.read_body(Declared(32 << 20, [b"{", b'"a": 1}']))  # type: ignore
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert bytes(body) == b'{"a": 1}'
    assert peak < 1 << 20, f"{peak:,} bytes taken for an 8-byte body that declared 32 MiB"


async def test_a_body_sent_in_many_chunks_comes_back_whole_and_in_order():
    chunks = [bytes([65 + k % 26]) * (1000 + k) for k in range(300)]
    body = await limits.read_body(Declared(sum(map(len, chunks)), list(chunks)))  # type: ignore
    assert bytes(body) == b"".join(chunks)
