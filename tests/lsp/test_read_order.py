"""A read across lanes answers after the requests that arrived before it: ctx/why, ctx/session/list
and ctx/conversations pipelined right after an assembly or a chat's turn (as a client that does
not wait for each answer sends them) answered from before it: `[]` from ctx/why reads as "kept
whole" for messages that were summarized. The real daemon over stdio, one write."""

from __future__ import annotations

import asyncio
import contextlib
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
    """ctx/inspect and ctx/why pipelined between two appends counted the second one in about
    4 rounds of 10: a read waited for the requests before it, but the append after it ran
    beside it. Several rounds, each in one write, as the race needs. A list holds no lane back
    (a slow session would stall the others: the test below): it counts the first append,
    maybe the second."""
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
        assert [(listed in (2 * k + 1, 2 * k + 2), first, second)
                for k, (listed, first, second) in enumerate(seen)] \
            == [(True, True, False)] * 12, seen
    finally:
        assert await daemon.close() == 0


async def test_a_list_or_a_chat_read_holds_no_other_session_behind_a_slow_one(tmp_path):
    """Session A's assembly waits on the client's ctx/summarize; a ctx/session/list, a
    ctx/conversations and the page of chat c1 are sent meanwhile, then requests on session B
    and chat c2. The list waits for A (it answers after what came before it); B, c1's page and
    c2 have nothing to do with A and answer first. They waited for the summary (12 s in the
    probe): the list, or a chat's read, held back every lane of the workspace. The order of
    the answers is asserted; the wait for B only bounds a failing run."""
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        await daemon.request(0, "initialize", {
            "processId": None, "rootUri": make_repo(WORLD / "slow-one-repo").as_uri(),
            "capabilities": {"experimental": {"ctxlayer": {"summarize": True}}},
            "initializationOptions": {"config": {"session": {"summarizerTimeout": 120}}}})
        await daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        for sid in ("A", "B"):
            await daemon.request(f"open-{sid}", "ctx/session/open",
                                 {"sessionId": sid, "budget": 1500 if sid == "A" else 3000})
        await daemon.request("append-A", "ctx/session/append",
                             {"sessionId": "A", "messages": turns(30, 45)})
        chat = {"model": "gpt-4o", "messages": [{"role": "user", "content": "a chat"}]}
        await daemon.request("prepare-c1", "ctx/prepare", {
            "format": "openai", "request": chat, "conversationId": "c1", "budget": 3000})
        await daemon.send_raw(frame("assemble-A", "ctx/assemble", {"sessionId": "A"}))
        asked = await _summarize_asked(daemon)
        later = ("list", "chats", "inspect-c1", "budget-B", "prepare-c2")
        await daemon.send_raw(b"".join([
            frame("list", "ctx/session/list", {}),
            frame("chats", "ctx/conversations", {}),
            frame("inspect-c1", "ctx/inspect", {"sessionId": "chat-c1"}),
            frame("budget-B", "ctx/session/budget", {"sessionId": "B"}),
            frame("prepare-c2", "ctx/prepare", {"format": "openai", "request": chat,
                                                "conversationId": "c2", "budget": 3000}),
        ]))
        with contextlib.suppress(TimeoutError):
            await _arrived(daemon, ["inspect-c1", "budget-B", "prepare-c2"], timeout=30)
        await daemon.send({"jsonrpc": "2.0", "id": asked["id"],
                           "result": {"text": "Summary: lorem ipsum."}})
        await _arrived(daemon, ["assemble-A", *later], timeout=60)
        order = [i for i in daemon.responses if i in ("assemble-A", *later)]
        assert all("result" in daemon.responses[i] for i in order), daemon.responses
        first = set(order[:3])
        assert first == {"inspect-c1", "budget-B", "prepare-c2"}, order
        assert order.index("list") > order.index("assemble-A"), order
        assert order.index("chats") > order.index("assemble-A"), order
    finally:
        assert await daemon.close() == 0


async def _summarize_asked(daemon: RawDaemon) -> dict:
    async def wait() -> dict:
        while True:
            for msg in daemon.notifications:
                if msg.get("method") == "ctx/summarize" and "id" in msg:
                    return msg
            daemon._arrived.clear()
            await daemon._arrived.wait()

    return await asyncio.wait_for(wait(), 60)


async def _arrived(daemon: RawDaemon, ids: list[str], timeout: float) -> None:
    """Wait until every answer of ``ids`` arrived, leaving them in `daemon.responses` in the
    order they came."""
    async def wait() -> None:
        while not all(i in daemon.responses for i in ids):
            daemon._arrived.clear()
            await daemon._arrived.wait()

    await asyncio.wait_for(wait(), timeout)


async def test_a_list_answers_after_a_new_chats_first_turn_sent_before_it(tmp_path):
    """A new chat's ctx/prepare (no conversationId) looks for its chat in the state folder
    before it takes its lane: ctx/conversations and ctx/session/list pipelined after it
    answered without it, six rounds of six. Each round in one write, as the race needs."""
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        await daemon.initialize(make_repo(WORLD / "new-chat-repo"))
        seen = []
        for k in range(6):
            chat = {"model": "gpt-4o", "messages": [
                {"role": "system", "content": f"system {k}"},
                {"role": "user", "content": f"question {k}: " + "lorem ipsum " * 50}]}
            await daemon.send_raw(b"".join([
                frame(f"prepare-{k}", "ctx/prepare", {"format": "openai", "request": chat,
                                                      "budget": 8000}),
                frame(f"chats-{k}", "ctx/conversations", {}),
                frame(f"list-{k}", "ctx/session/list", {}),
            ]))
            answers = {i: await daemon.response(f"{i}-{k}", timeout=60)
                       for i in ("prepare", "chats", "list")}
            assert all("result" in a for a in answers.values()), answers
            cid = answers["prepare"]["result"]["conversationId"]
            chats = [c["conversationId"] for c in answers["chats"]["result"]["conversations"]]
            listed = [s["sessionId"] for s in answers["list"]["result"]["sessions"]]
            seen.append((len(chats), cid in chats, f"chat-{cid}" in listed))
        assert seen == [(k + 1, True, True) for k in range(6)]
    finally:
        assert await daemon.close() == 0
