"""The aiohttp parts the gateway's runner relies on beyond aiohttp's documented API
(gateway/runner.py PRIVATE) are still there in the installed aiohttp, with the parameters we
pass: an aiohttp upgrade that moves one fails here, naming it, and the gateway refuses to
start rather than answer its errors in text again. (pyproject.toml allows any aiohttp 3.)"""

from __future__ import annotations

import asyncio
import inspect

import pytest
from aiohttp import web, web_protocol
from aiohttp.http_parser import RawRequestMessage

from ctxlayer.gateway import runner
from ctxlayer.gateway.runner import PRIVATE, Runner


@pytest.mark.parametrize(("owner", "name", "params"), PRIVATE,
                         ids=[f"{getattr(o, '__name__', o)}.{n}" for o, n, _ in PRIVATE])
def test_each_part_is_where_the_runner_expects_it(owner, name, params):
    if params is None:  # an attribute: of a module, or set on a server as it is made
        found = asyncio.run(_server()) if owner is web.Server else owner
        assert hasattr(found, name), f"aiohttp no longer has {owner.__name__}.{name}"
        return
    member = owner.__dict__.get(name)
    assert member is not None, f"aiohttp no longer defines {owner.__name__}.{name}"
    got = tuple(inspect.signature(member).parameters)
    assert got[:len(params)] == params, f"{owner.__name__}.{name} takes {got} now"


async def _server() -> web.Server:
    return web.Server(lambda request: None)  # type: ignore[arg-type,return-value]


def test_the_placeholder_of_a_refused_request_is_a_request_message():
    assert isinstance(web_protocol.ERROR, RawRequestMessage)
    assert runner._REFUSED.version == (1, 1)


def test_the_runner_refuses_a_server_it_does_not_know(monkeypatch):
    class Other(web.Server):
        pass

    async def other_server(self):
        return Other(lambda request: None)

    monkeypatch.setattr(web.AppRunner, "_make_server", other_server)

    async def run() -> None:
        runner = Runner(web.Application())
        with pytest.raises(RuntimeError, match="PRIVATE"):
            await runner.setup()  # no site was started: nothing to clean up

    asyncio.run(run())
