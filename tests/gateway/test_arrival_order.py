"""A conversation's requests apply in the order their bodies came. A body of 256 KiB or more
is read off the loop; a small request of the same chat that came after it was read at once,
prepared first, and the chat was left with the older request as its last turn. A real gateway
and the strict stand-in; the big body's read is held until the small request could have
overtaken it (or a while, when it cannot)."""

from __future__ import annotations

import threading

import httpx2 as httpx

from ctxlayer.gateway import chats, limits, server

CID = "in-arrival-order"


def test_a_small_request_does_not_overtake_a_big_one_of_its_chat(stack, monkeypatch):
    entered: list[str] = []
    small_in, big_came = threading.Event(), threading.Event()
    read, prepare, body_of = server.read_request, chats.prepare, limits.read_body

    async def reading(request):
        body = await body_of(request)
        if len(body) >= server.OFF_LOOP_BYTES:
            big_came.set()
        return body

    def slow_read(fmt: str, raw: bytes) -> dict:
        if len(raw) >= server.OFF_LOOP_BYTES:  # on a worker: the small one may come meanwhile
            small_in.wait(2)
        return read(fmt, raw)

    async def noting(caller, fmt, body, *args, **kw):
        entered.append(body["messages"][-1]["content"])
        if entered[-1] == "small":
            small_in.set()
        return await prepare(caller, fmt, body, *args, **kw)

    monkeypatch.setattr(limits, "read_body", reading)
    monkeypatch.setattr(server, "read_request", slow_read)
    monkeypatch.setattr(chats, "prepare", noting)
    history = [{"role": "user" if k % 2 == 0 else "assistant", "content": f"turn {k} " * 40}
               for k in range(1200)] + [{"role": "user", "content": "big"}]
    headers = {"Authorization": "Bearer sk-test", "x-ctxlayer-conversation": CID}
    url = f"{stack.openai_url}/chat/completions"
    answers: dict[str, int] = {}

    def send(tag: str, messages: list, sent_with: dict = headers) -> None:
        answers[tag] = httpx.post(url, headers=sent_with, timeout=60, json={
            "model": "gpt-4o", "messages": messages}).status_code

    big = threading.Thread(target=send, args=("big", history))
    big.start()
    assert big_came.wait(30)  # all of it in the gateway's hands before the small one is sent
    # another client's chat does not wait for that body: it is prepared while it is held
    send("other", [{"role": "user", "content": "other"}], {"Authorization": "Bearer sk-other"})
    send("small", [{"role": "user", "content": "small"}])
    big.join()
    assert answers == {"big": 200, "small": 200, "other": 200}
    assert entered == ["other", "big", "small"]
