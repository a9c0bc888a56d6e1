"""An encoding nobody has asked for yet is built only while the server is quiet: its build
holds the interpreter for 40-120 ms in one call, and a request that came meanwhile waited for
all of it. Every request the state answers keeps it from being quiet."""

from __future__ import annotations

import asyncio
import time

from ctxlayer import protocol
from ctxlayer.state import tokens
from ctxlayer.state.requests import call


def test_quiet_after_the_last_request_has_ended_long_enough(state, monkeypatch):
    monkeypatch.setattr(tokens, "QUIET_FOR", 0.2)
    t = state.tokenizers
    time.sleep(0.25)
    assert t.quiet()  # nothing asked since the start
    with t.answering():
        time.sleep(0.25)
        assert not t.quiet()  # under way, however long
        with t.answering():
            pass
        assert not t.quiet()  # the other is still under way
    assert not t.quiet()  # just ended
    time.sleep(0.25)
    assert t.quiet()


async def test_every_request_answered_keeps_the_server_from_being_quiet(caller, state,
                                                                         monkeypatch):
    monkeypatch.setattr(tokens, "QUIET_FOR", 0.2)
    await call(caller, "ctx/count", protocol.CountParams(texts=["warm up"]))
    await asyncio.sleep(0.25)
    assert state.tokenizers.quiet()
    seen: list[bool] = []
    real = state.tokenizers.can_inline

    def noted(*args):  # asked while the request is under way
        seen.append(state.tokenizers.quiet())
        return real(*args)

    monkeypatch.setattr(state.tokenizers, "can_inline", noted)
    counted = await call(caller, "ctx/count", protocol.CountParams(texts=["hello world"]))
    assert counted.total == 2
    assert seen == [False]
    assert not state.tokenizers.quiet()  # just answered
