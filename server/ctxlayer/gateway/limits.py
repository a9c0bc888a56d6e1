"""How long and how much a client may take: the gateway's defence against slow or huge
requests, so that a few hundred slowloris sockets cannot hold its file descriptors.

Owns: the aiohttp server options that close a connection whose request headers have not all
arrived within `[gateway] header_timeout` (aiohttp's keep-alive timer closes a connection
still waiting for a whole request head: from the connection's start, and from the previous
answer on a kept-alive one), and reading a body under two limits: `max_body_mb` (413) and a
minimal rate (408), `MIN_BODY_KIB_PER_S` after a grace of `header_timeout`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from ctxlayer.config import MIN_BODY_KIB_PER_S, GatewayConfig
from ctxlayer.gateway.errors import GatewayError


class BodyLimits:
    """What a body may weigh and how slowly it may come (from `[gateway]`)."""

    def __init__(self, config: GatewayConfig) -> None:
        self.max_bytes = config.max_body_mb * 1024 * 1024
        self.grace = config.header_timeout
        self.min_rate = MIN_BODY_KIB_PER_S * 1024  # bytes per second


#: where the application keeps its BodyLimits
KEY = web.AppKey("ctxlayer_body_limits", BodyLimits)


def server_options(config: GatewayConfig) -> dict[str, Any]:
    """The aiohttp runner options for `[gateway]`'s limits."""
    # a refused body is drained at most this long before the connection closes, so that the
    # client still reads its 408 / 413 (aiohttp's lingering close)
    # a compressed body is read as it came and decoded by `encodings` (aiohttp's own decoding
    # answers a coding it cannot read with a plain-text 400, not in the provider's shape)
    return {"keepalive_timeout": config.header_timeout, "lingering_time": config.header_timeout,
            "auto_decompress": False}


def too_large(limits: BodyLimits) -> GatewayError:
    return GatewayError(413, f"the body is larger than {limits.max_bytes // (1024 * 1024)} MiB "
                             "([gateway] max_body_mb)", field="body")


async def read_body(request: web.Request) -> bytearray:
    """The whole body, or GatewayError: 413 over the size limit (before reading it when the
    client declares its length), 408 when it comes slower than the minimal rate. Each chunk is
    added to the body as it comes (one join of a 10 MB body at the end held the interpreter 30
    ms, and every other chat's request with it), the body growing as the bytes come: room
    taken at once for the declared length let 40 sockets that each declared 32 MiB and sent
    one byte hold 1 GB."""
    limits = request.app[KEY]
    declared = request.content_length or 0
    if declared > limits.max_bytes:
        raise too_large(limits)
    loop = asyncio.get_running_loop()
    start = loop.time()
    body = bytearray()
    size = 0
    while True:
        # by now at least (elapsed - grace) * rate bytes must have come
        allowance = start + limits.grace + size / limits.min_rate - loop.time()
        try:
            if allowance <= 0:
                raise TimeoutError
            async with asyncio.timeout(allowance):
                chunk = await request.content.readany()
        except TimeoutError:
            raise GatewayError(408, f"the body came slower than {MIN_BODY_KIB_PER_S} KiB/s "
                                    f"(after {limits.grace:g} s, [gateway] header_timeout)",
                               field="body") from None
        if not chunk:
            return body
        if size + len(chunk) > limits.max_bytes:
            raise too_large(limits)
        body += chunk  # grown in place (a large buffer is moved by the kernel, not copied)
        size += len(chunk)
