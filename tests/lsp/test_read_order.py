"""A read across lanes answers after the requests that arrived before it: ctx/why, ctx/session/list
and ctx/conversations pipelined right after an assembly or a chat's turn (as a client that does
not wait for each answer sends them) answered from before it: `[]` from ctx/why reads as "kept
whole" for messages that were summarized. The real daemon over stdio, one write."""

from __future__ import annotations

import json

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo

pytestmark = pytest.mark.e2e


def frame(i: str, method: str, params: dict) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def turns(n: int, words: int) -> list[dict]:
    return [{"role": "user" if k % 2 == 0 else "assistant", "id": f"m{k}",
             "content": f"turn {k} " + "lorem ipsum dolor sit " * words} for k in range(n)]


async def test_why_and_the_lists_answer_after_what_arrived_before_them(tmp_path):
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        await daemon.initialize(make_repo(WORLD / "read-order-repo"))
        await daemon.request("open", "ctx/session/open", {"sessionId": "s", "budget": 2000})
        chat = {"model": "gpt-4o", "messages": turns(301, 150)}
        await daemon.send_raw(b"".join([
            frame("append", "ctx/session/append", {"sessionId": "s", "messages": turns(40, 225)}),
            frame("list", "ctx/session/list", {}),
            frame("assemble", "ctx/assemble", {"sessionId": "s"}),
            frame("why", "ctx/why", {"sessionId": "s"}),
            frame("why-m3", "ctx/why", {"sessionId": "s", "messageId": "m3"}),
            frame("prepare", "ctx/prepare", {"format": "openai", "request": chat,
                                             "conversationId": "c1", "budget": 8000}),
            frame("why-c1", "ctx/why", {"conversationId": "c1"}),
            frame("chats", "ctx/conversations", {}),
            frame("inspect-c1", "ctx/inspect", {"sessionId": "chat-c1"}),
        ]))
        answers = {i: await daemon.response(i, timeout=120) for i in (
            "append", "list", "assemble", "why", "why-m3", "prepare", "why-c1", "chats",
            "inspect-c1")}
        assert all("result" in a for a in answers.values()), answers
        listed = {s["sessionId"]: s for s in answers["list"]["result"]["sessions"]}
        assert listed["s"]["messages"] == 40, listed["s"]
        assert answers["assemble"]["result"]["compacted"], "the budget forces a summary"
        summarized = {e["messageId"] for e in answers["why"]["result"]["entries"]
                      if e["action"] == "summarized"}
        assert "m3" in summarized
        assert [e["action"] for e in answers["why-m3"]["result"]["entries"]] == ["summarized"]
        assert answers["why-c1"]["result"]["entries"], "the turn before it cut the chat"
        assert [c["conversationId"] for c in answers["chats"]["result"]["conversations"]] \
            == ["c1"]
        assert "<title>ctxlayer · prepare chat c1</title>" in answers["inspect-c1"]["result"]["html"]
    finally:
        assert await daemon.close() == 0


def appended(name: str) -> bytes:
    """An append to session s of one message saying ``name``, under the id ``name``."""
    return frame(name, "ctx/session/append", {"sessionId": "s", "messages": [
        {"role": "user", "content": name}]})


async def test_a_read_answers_before_what_arrived_after_it(tmp_path):
    """ctx/session/list and ctx/inspect pipelined between two appends counted the second one
    in about 4 rounds of 10: a read waited for the requests before it, but the append after
    it ran beside it. Several rounds, each in one write, as the race needs."""
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        await daemon.initialize(make_repo(WORLD / "read-before-later-repo"))
        await daemon.request("open", "ctx/session/open", {"sessionId": "s"})
        seen = []
        for k in range(12):
            await daemon.send_raw(b"".join([
                appended(f"first-{k}"),
                frame(f"list-{k}", "ctx/session/list", {}),
                frame(f"inspect-{k}", "ctx/inspect", {"sessionId": "s"}),
                frame(f"why-{k}", "ctx/why", {"sessionId": "s"}),
                appended(f"second-{k}"),
            ]))
            answers = {i: await daemon.response(f"{i}-{k}", timeout=60)
                       for i in ("first", "list", "inspect", "why", "second")}
            assert all("result" in a for a in answers.values()), answers
            listed = answers["list"]["result"]["sessions"][0]["messages"]
            html = answers["inspect"]["result"]["html"]
            seen.append((listed, f"first-{k}" in html, f"second-{k}" in html))
        assert seen == [(2 * k + 1, True, False) for k in range(12)]
    finally:
        assert await daemon.close() == 0
