"""The gateway's test stack: the stand-in provider and a real gateway (a real State, the
gateway's Caller on a small workspace) serving on one loop in a background thread, so the
official synchronous SDKs, raw HTTP and subprocesses can all talk to it."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import msgspec
import openai
import pytest
from providers.standin import StandinThread

from ctxlayer.config import GatewayConfig
from ctxlayer.gateway import GatewayServer, start_gateway
from ctxlayer.gateway.standalone import open_caller
from ctxlayer.state import State

SMALL_WINDOW = {"standin-small": 4096, "standin-twin": 4096}


class Stack:
    """The stand-in and a gateway forwarding to it, on the stand-in's loop."""

    def __init__(self, thread: StandinThread, gateway: GatewayServer, state: State) -> None:
        self.thread, self.gateway, self.state = thread, gateway, state
        self.standin = thread

    @property
    def openai_url(self) -> str:
        return self.gateway.urls.openai

    @property
    def anthropic_url(self) -> str:
        return self.gateway.urls.anthropic

    def openai(self, key: str = "sk-test-openai", **kw: Any) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.openai_url, api_key=key, max_retries=0,
                             timeout=30, **kw)

    def anthropic(self, key: str = "sk-ant-test", **kw: Any) -> anthropic.Anthropic:
        return anthropic.Anthropic(base_url=self.anthropic_url, api_key=key, max_retries=0,
                                   timeout=30, **kw)

    def model_requests(self) -> list[dict]:
        """What the stand-in received on its model routes."""
        return [r for r in self.standin.requests() if r["path"] in (
            "/v1/chat/completions", "/v1/messages", "/v1/responses")]

    def reported(self) -> None:
        """Once the usage of every answer given so far is reported (after its end went out)."""
        self.thread.call(self.gateway.reported())

    def bias(self, workspace: str, session_id: str) -> float:
        """The calibration of a live chat's session (billed / counted): where the provider's
        count of its prompts goes (the chat's figures are ours)."""
        return self.state.conversations.of_session(workspace, session_id).bias

    def reports(self, workspace: str, session_id: str) -> int:
        """The provider's usage reports a live chat's calibration took."""
        return self.state.conversations.of_session(workspace, session_id).reports

    def wait_for(self, predicate: Any, what: str, timeout: float = 15) -> list[dict]:
        """The stand-in's requests once `predicate(requests)` holds (an event, not a timing)."""
        deadline = time.monotonic() + timeout
        while True:
            requests = self.standin.requests()
            if predicate(requests):
                return requests
            if time.monotonic() > deadline:
                raise AssertionError(f"never happened: {what}; requests: {requests}")
            time.sleep(0.02)


def start_stack(thread: StandinThread, root: Path, state_dir: Path,
                **config: Any) -> tuple[GatewayServer, State]:
    standin = thread.standin
    assert standin is not None
    # the stand-in's URLs unless ``config`` names others (its host as `localhost`, say)
    gateway_config = msgspec.structs.replace(GatewayConfig(), **{
        "openai_base_url": standin.openai, "anthropic_base_url": standin.anthropic, **config})

    async def start() -> tuple[GatewayServer, State]:
        state = State(state_dir)
        caller = await open_caller(state, root)
        return await start_gateway(state, caller, gateway_config), state

    return thread.call(start())


def stop_stack(thread: StandinThread, gateway: GatewayServer, state: State) -> None:
    async def stop() -> None:
        await gateway.close()
        await state.work(state.close)

    thread.call(stop())


@contextlib.contextmanager
def fresh_stack(base: Path, models: dict[str, int] | None = None,
                **standin: Any) -> Iterator[Stack]:
    """A stand-in made with ``standin`` and a gateway before it, told ``models``' windows
    (`[gateway] models`), their workspace, state and config folders in ``base``: the user's own
    config is never read."""
    for sub in ("ws", "state", "config"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as mp, StandinThread(**standin) as thread:
        mp.setenv("XDG_CONFIG_HOME", str(base / "config"))
        gateway, state = start_stack(thread, base / "ws", base / "state", models=models or {})
        try:
            yield Stack(thread, gateway, state)
        finally:
            stop_stack(thread, gateway, state)


def small_stack(base: Path) -> contextlib.AbstractContextManager[Stack]:
    """A stack in ``base`` where `standin-small` (and `standin-twin`, another model counted
    alike) has a 4096-token window on both sides."""
    return fresh_stack(base, SMALL_WINDOW, windows=SMALL_WINDOW)


WORDS = ("parser token budget window cache prefix session editor stream answer question "
         "function module import error result value change commit branch").split()


def prose(seed: str, words: int = 260) -> str:
    """``words`` random words, the same for the same seed: a chat's turn of some size."""
    rng = random.Random(seed)
    return f"{seed}: " + " ".join(rng.choice(WORDS) + str(rng.randint(0, 99))
                                  for _ in range(words))
