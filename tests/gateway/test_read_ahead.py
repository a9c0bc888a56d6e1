"""The facts of a gateway conversation's next step are read while the provider thinks: the
gateway starts the read once a turn's request went upstream, not beside the request on its
way out (there it slowed the turn: 13-17 ms on a 5 MB chat's first request after a restart).
A real gateway and the strict stand-in; the pure `warm` says what is left to read."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_stack import Stack, start_stack, stop_stack
from providers.standin import StandinThread

from ctxlayer.core.prepare import near_budget, warm
from ctxlayer.gateway import chats

CHAT = "gpt-4o"
CID = "reading"


def _output(k: int) -> str:
    return "\n".join([f"ran pytest -k case_{k}: tests/test_queue.py::test_case_{k} FAILED"]
                     + [f"src/queue_{k}.py line {j}: retry step {j} kept item {j * k}"
                        for j in range(14)])


def _round(messages: list, k: int) -> None:
    messages.append({"role": "assistant", "content": None, "tool_calls": [{
        "id": f"call_{k}", "type": "function",
        "function": {"name": "run", "arguments": f'{{"cmd": "pytest -k case_{k}"}}'}}]})
    messages.append({"role": "tool", "tool_call_id": f"call_{k}", "content": _output(k)})


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root, state_dir = tmp_path / "workspace", tmp_path / "state"
    root.mkdir()
    state_dir.mkdir()
    with StandinThread() as thread:
        gateway, state = start_stack(thread, root, state_dir, models={CHAT: 8000})
        try:
            yield Stack(thread, gateway, state)
        finally:
            stop_stack(thread, gateway, state)


def _conversation(stack: Stack):
    return stack.state.conversations._get(stack.gateway.caller.workspace, CID)


def _left_to_read(stack: Stack):
    """What a read ahead would still read of the conversation's state (None: nothing)."""
    conv = _conversation(stack)
    return warm(conv.state, conv.budget - conv.tools_tokens)


def _prepare(stack: Stack, messages: list) -> None:
    # a list of its own, as every body the gateway decodes: the state keeps the request
    body = {"model": CHAT, "messages": list(messages), "max_tokens": 500}
    stack.thread.call(chats.prepare(stack.gateway.caller, "openai", body, CID,
                                    context_window=8000))  # as [gateway] models says
    stack.thread.call(stack.state.conversations.settled())


async def _read_ahead(stack: Stack) -> None:
    chats.read_ahead(stack.gateway.caller, CID)  # on the loop, as the gateway calls it


def test_the_gateway_reads_ahead_once_the_request_went_upstream(stack: Stack) -> None:
    messages = [{"role": "system", "content": "You are a careful coding agent."},
                {"role": "user", "content": "Make the retry queue keep item ordering."}]
    k = 0
    while True:  # the gateway's own prepare: until the next step is near
        _round(messages, k)
        k += 1
        _prepare(stack, messages)
        conv = _conversation(stack)
        if near_budget(conv.state, conv.budget - conv.tools_tokens):
            break
        assert k < 40, "the chat never came near its budget"
    # near, and its turns settled: the prepare itself read nothing ahead
    assert _left_to_read(stack) is not None
    stack.thread.call(_read_ahead(stack))
    stack.thread.call(stack.state.conversations.settled())
    assert _left_to_read(stack) is None

    # through the gateway: the facts are read while the upstream holds the answer
    _round(messages, k)
    stack.standin.for_model(CHAT, text="Looking at it.", hold=True)
    answered: dict = {}

    def send() -> None:
        answered["reply"] = stack.openai().chat.completions.create(
            model=CHAT, messages=messages, max_tokens=500,
            extra_headers={"x-ctxlayer-conversation": CID})

    sender = threading.Thread(target=send)
    sender.start()
    stack.wait_for(lambda rs: any(r["body"] and len(r["body"]["messages"]) > 0
                                  and r["status"] is None for r in rs), "the request upstream")
    conv = _conversation(stack)
    stack.thread.call(stack.state.conversations.settled())
    assert len(conv.state.messages) == len(messages)  # the held turn's own state
    assert _left_to_read(stack) is None
    assert "reply" not in answered  # and the answer still held
    stack.standin.release_model(CHAT)
    sender.join(timeout=30)
    assert answered["reply"].choices[0].message.content == "Looking at it."
