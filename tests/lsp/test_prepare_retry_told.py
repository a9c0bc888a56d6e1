"""ctx/prepare of the same request sent again (a client's retry, an editor regenerating the
last answer) answers what the first answer said: the same `notice`, `dropped` and
`truncated`, and the whole result as reused. The audit log does not grow: the retry did
nothing new.

Before: the retry of a request that summarized 15 messages answered `notice: null` and empty
lists, as if nothing had been cut. And after a restart (clean, or SIGKILL) between the request
and its retry, the retry answered the same summarized request with `notice: null` and
`dropped: []`: what the turn told was not kept with its window. The real daemon over stdio."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from conftest import RawDaemon, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e


def history() -> list[dict]:
    return [{"id": f"u{i}", "role": "user" if i % 2 == 0 else "assistant",
             "content": f"MSG{i} " + "lorem ipsum dolor " * 40} for i in range(21)]


async def prepared(daemon: RawDaemon, messages: list[dict] | None = None,
                   budget: int = 1200) -> dict:
    return await result(daemon, "ctx/prepare", {
        "format": "ctxlayer", "budget": budget, "conversationId": "retry",
        "request": {"messages": history() if messages is None else messages}})


async def test_a_cut_request_sent_again_says_again_what_was_cut(own_daemon):
    first = await prepared(own_daemon)
    assert first["notice"] and first["dropped"], first["notice"]
    audit = await result(own_daemon, "ctx/session/audit", {"sessionId": first["sessionId"]})
    again = await prepared(own_daemon)
    assert again["request"] == first["request"]
    assert again["notice"] == first["notice"]
    assert again["dropped"] == first["dropped"] and again["truncated"] == first["truncated"]
    assert again["compacted"] and again["tokens"] == first["tokens"]
    assert again["cacheReuseTokens"] > 0
    after = await result(own_daemon, "ctx/session/audit", {"sessionId": first["sessionId"]})
    assert after["entries"] == audit["entries"]


async def started(base: Path) -> RawDaemon:
    """A daemon on the state folder and repository under ``base`` (made by the first)."""
    repo = base / "repo"
    daemon = await RawDaemon.start(env=hermetic_env(base / "world"))
    await daemon.initialize(repo if repo.exists() else make_repo(repo))
    return daemon


async def stopped(daemon: RawDaemon, how: str) -> None:
    if how == "kill":  # the window a step made is written before its answer goes out
        os.kill(daemon.proc.pid, signal.SIGKILL)
        await daemon.proc.wait()
    else:
        assert await daemon.close() == 0


@pytest.mark.parametrize("how", ["close", "kill"])
async def test_sent_again_after_a_restart_says_what_was_cut(tmp_path, how):
    """The first request after a restart repeats the request whose window was kept: it is
    told what the first answer said, and audits nothing anew."""
    daemon = await started(tmp_path)
    try:
        first = await prepared(daemon)
        assert first["notice"] and first["dropped"], first["notice"]
        await stopped(daemon, how)
        daemon = await started(tmp_path)
        audit = await result(daemon, "ctx/session/audit", {"sessionId": first["sessionId"]})
        again = await prepared(daemon)
        assert again["request"] == first["request"]
        assert again["notice"] == first["notice"]
        assert again["dropped"] == first["dropped"] and again["truncated"] == first["truncated"]
        assert again["compacted"] and again["tokens"] == first["tokens"]
        after = await result(daemon, "ctx/session/audit", {"sessionId": first["sessionId"]})
        assert after["entries"] == audit["entries"]
        # and again without a restart in between
        third = await prepared(daemon)
        assert (third["notice"], third["dropped"]) == (first["notice"], first["dropped"])
    finally:
        assert await daemon.close() == 0


async def test_after_a_restart_only_the_same_request_is_told_again(tmp_path):
    """Never more than the first answer told: the same messages at another budget are a turn
    of their own, and a turn that went on without cutting (its window as the first's, what it
    sent kept beside it) is told nothing again after a restart, not what the turn before it
    cut."""
    daemon = await started(tmp_path)
    try:
        first = await prepared(daemon)
        assert first["dropped"]
        later = [*history(), {"id": "a21", "role": "assistant", "content": "ok"},
                 {"id": "u22", "role": "user", "content": "and then?"}]
        went_on = await prepared(daemon, later)
        assert went_on["notice"] is None and not went_on["dropped"], went_on["notice"]
        assert await daemon.close() == 0
        daemon = await started(tmp_path)
        again = await prepared(daemon, later)
        assert again["request"] == went_on["request"]
        assert again["notice"] is None and again["dropped"] == []
        assert await daemon.close() == 0
        daemon = await started(tmp_path)
        other = await prepared(daemon, history(), budget=1300)
        assert other["notice"] != first["notice"]
    finally:
        assert await daemon.close() == 0
