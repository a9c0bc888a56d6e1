"""`[gateway] summarizer = "upstream"` in each provider's format: an agent loop through the real
gateway to the strict stand-in, the summary ahead of need written by the chat's own upstream.
What it answers is checked before it stands in a chunk (a refusal is no summary), what it is
asked fits its window, and what it answered outlives a restart."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from gateway_stack import Stack, start_stack, stop_stack
from providers.standin import StandinThread
from test_upstream_summarizer import _output

KEY = "sk-upsum-loop-3b8e1d"
#: on the topic of the tool outputs below (the off-topic check reads their words)
TEXT = ("Decided: the retry queue keeps item ordering; every case test passed. "
        "Open: the backoff of the retry queue.")
#: each format's chat model and the small model asked for its summaries
MODELS = {"openai": ("gpt-4o", "gpt-4o-mini"), "responses": ("gpt-4o", "gpt-4o-mini"),
          "anthropic": ("claude-sonnet-4-5", "claude-haiku-4-5")}
ASK = "Make the retry queue keep item ordering; run the case tests one by one."
SYSTEM = "You are a careful coding agent."
RUN = {"type": "object", "properties": {"cmd": {"type": "string"}}}


class Loop:
    """An agent loop of one format through the gateway: each turn a request with the
    conversation so far, then a tool call and its output appended."""

    def __init__(self, stack: Stack, fmt: str, chat: str) -> None:
        self.stack, self.fmt, self.chat = stack, fmt, chat
        self.messages: list[dict] = [{"role": "user", "content": ASK}]
        if fmt == "openai":
            self.messages.insert(0, {"role": "system", "content": SYSTEM})

    def _request(self) -> tuple[str, dict, dict]:
        head = {"x-ctxlayer-conversation": "loop"}
        if self.fmt == "anthropic":
            return (self.stack.anthropic_url + "/v1/messages",
                    {**head, "x-api-key": KEY, "anthropic-version": "2023-06-01"},
                    {"model": self.chat, "max_tokens": 1000, "system": SYSTEM,
                     "messages": self.messages,
                     "tools": [{"name": "run", "description": "run a command",
                                "input_schema": RUN}]})
        head["authorization"] = f"Bearer {KEY}"
        if self.fmt == "openai":
            return (self.stack.openai_url + "/chat/completions", head,
                    {"model": self.chat, "max_completion_tokens": 1000,
                     "messages": self.messages,
                     "tools": [{"type": "function", "function": {
                         "name": "run", "description": "run a command", "parameters": RUN}}]})
        return (self.stack.openai_url + "/responses", head,
                {"model": self.chat, "max_output_tokens": 1000, "store": False,
                 "instructions": SYSTEM, "input": self.messages,
                 "tools": [{"type": "function", "name": "run", "description": "run a command",
                            "parameters": RUN}]})

    def turn(self, k: int) -> httpx.Response:
        url, headers, body = self._request()
        answer = httpx.post(url, json=body, headers=headers, timeout=60)
        assert answer.status_code == 200, answer.text
        cmd = f"pytest -k case_{k}"
        if self.fmt == "anthropic":
            self.messages += [
                {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k}",
                                                   "name": "run", "input": {"cmd": cmd}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}",
                                              "content": _output(k)}]}]
        elif self.fmt == "openai":
            self.messages += [
                {"role": "assistant", "content": None, "tool_calls": [{
                    "id": f"call_{k}", "type": "function",
                    "function": {"name": "run", "arguments": f'{{"cmd": "{cmd}"}}'}}]},
                {"role": "tool", "tool_call_id": f"call_{k}", "content": _output(k)}]
        else:
            self.messages += [
                {"type": "function_call", "call_id": f"call_{k}", "name": "run",
                 "arguments": f'{{"cmd": "{cmd}"}}'},
                {"type": "function_call_output", "call_id": f"call_{k}", "output": _output(k)}]
        self.stack.thread.call(self.stack.state.conversations.settled())
        return answer

    def chat_requests(self) -> list[dict]:
        return [r for r in self.stack.standin.requests() if r["body"] and "tools" in r["body"]]

    def summaries_asked(self) -> list[dict]:
        return [r for r in self.stack.standin.requests()
                if r["body"] and "tools" not in r["body"]]

    def why(self) -> list[str]:
        async def why() -> list:
            return self.stack.state.conversations.why(self.stack.gateway.caller.workspace,
                                                      "loop")
        return [e.reason for e in self.stack.thread.call(why())]


def chunks_of(request: dict) -> list[str]:
    """The summary chunks a chat request holds, whatever its format."""
    raw = request["body"].get("messages") or request["body"].get("input") or []
    texts: list[Any] = []
    for m in raw:
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"text": content}]
        texts += [b.get("text") for b in blocks if isinstance(b, dict)]
    return [t for t in texts if isinstance(t, str) and t.startswith("[Summary of")]


@pytest.fixture
def make_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    made: list = []

    def make(name: str, models: dict, windows: dict | None = None, **config) -> Stack:
        root, state_dir = tmp_path / name / "workspace", tmp_path / name / "state"
        root.mkdir(parents=True, exist_ok=True)
        state_dir.mkdir(exist_ok=True)
        thread = StandinThread(windows=windows or {}).__enter__()
        gateway, state = start_stack(thread, root, state_dir, models=models, **config)
        stack = Stack(thread, gateway, state)
        made.append(stack)

        def restart() -> None:  # the gateway and its state anew, on the same folders
            stop_stack(thread, stack.gateway, stack.state)
            stack.gateway, stack.state = start_stack(thread, root, state_dir, models=models,
                                                     **config)

        stack.restart = restart  # type: ignore[attr-defined]
        return stack

    yield make
    for stack in made:
        stop_stack(stack.thread, stack.gateway, stack.state)
        stack.thread.__exit__(None, None, None)


REFUSALS = ["I'm sorry, but I can't help with summarizing this conversation about the retry "
            "queue tests.",
            "I cannot summarize this conversation about the retry queue item ordering."]


@pytest.mark.parametrize("refusal", REFUSALS, ids=["sorry", "cannot"])
@pytest.mark.parametrize("fmt", ["openai", "anthropic", "responses"])
def test_a_refusal_is_no_summary(make_stack, fmt: str, refusal: str) -> None:
    """A refusal that names the topic passed the off-topic check: it stood in the chunk, in
    every later request, and the audit credited the upstream model. It is refused as a
    summary: the offline one stands in, and the audit says why."""
    chat, small = MODELS[fmt]
    stack = make_stack(fmt, {chat: 8000}, summarizer="upstream", summarizer_model=small)
    stack.standin.for_model(small, text=refusal)
    loop = Loop(stack, fmt, chat)
    for k in range(60):
        loop.turn(k)
        if chunks_of(loop.chat_requests()[-1]):
            break
    else:
        raise AssertionError("the loop never compacted")
    for j in range(k + 1, k + 4):  # and on, while the answer would be kept
        loop.turn(j)
    assert loop.summaries_asked(), "no summary was asked of the upstream"
    assert all(r["status"] == 200 for r in loop.summaries_asked())
    for request in loop.chat_requests():
        assert all(refusal not in text for text in chunks_of(request))
    reasons = loop.why()
    assert not any(r.endswith(f"summary written by the upstream's {small!r}") for r in reasons)
    opening = refusal.split(",")[0].split(" summarize")[0]
    said = f"offline (the summary by the upstream's {small!r} was refused: a refusal"
    assert any(said in r and opening in r for r in reasons), reasons


def _until_compacted(loop: Loop, turns: int = 60, after: int = 0) -> int:
    """Turns until a chat request holds a chunk (``after`` more turns then); its turn."""
    for k in range(turns):
        loop.turn(k)
        if chunks_of(loop.chat_requests()[-1]):
            for j in range(k + 1, k + 1 + after):
                loop.turn(j)
            return k
    raise AssertionError("the loop never compacted")


def test_a_reasoning_summarizer_is_asked_within_its_window(make_stack) -> None:
    """gpt-5 capped at 12000 tokens in `[gateway] models`: its summary requests asked 16k of
    output for its thinking beyond the summary, 12000 - 16384 left a negative window, every
    request was refused as over the window (400) and the audit said "the next summary is
    fitted to it", which never happened. Its room to think is cut to fit the window."""
    from ctxlayer.gateway.upsum import MIN_REASONING_ROOM

    stack = make_stack("small-gpt-5", {"gpt-5": 12000}, windows={"gpt-5": 12000},
                       summarizer="upstream")
    loop = Loop(stack, "openai", "gpt-5")
    _until_compacted(loop, after=2)
    asked = loop.summaries_asked()
    assert asked, "no summary was asked"
    for r in asked:
        assert r["status"] == 200, r["problems"]
        out = r["body"]["max_completion_tokens"]
        assert out > MIN_REASONING_ROOM and r["prompt_tokens"] + out <= 12000
    reasons = loop.why()
    assert not any("over its window" in r or "window of -" in r for r in reasons), reasons


def test_a_summarizer_too_small_to_ask_is_not_asked(make_stack, caplog) -> None:
    """A summarizing model whose window cannot hold a summary request besides its thinking
    (o3-mini capped at 3000 tokens): it was asked every step, each call refused as over the
    window and paid for nothing. It is never asked, the log says so once, the offline
    summary stands in."""
    caplog.set_level(logging.WARNING)
    stack = make_stack("tiny-o3", {"gpt-4o": 8000, "o3-mini": 3000},
                       windows={"o3-mini": 3000}, summarizer="upstream",
                       summarizer_model="o3-mini")
    loop = Loop(stack, "openai", "gpt-4o")
    _until_compacted(loop, after=6)
    assert loop.summaries_asked() == []
    said = [r.getMessage() for r in caplog.records if "cannot hold a summary request" in
            r.getMessage()]
    assert len(said) == 1 and "'o3-mini'" in said[0] and "3000 tokens" in said[0], said


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "responses"])
def test_a_summary_answered_ahead_outlives_a_restart(make_stack, fmt: str) -> None:
    """The gateway restarted between the summary's answer and the step that takes it: the
    summary was lost with the memory, the same call was made (and paid for) again, 2 asks
    against 1 without the restart. It is kept with the conversation's window."""
    chat, small = MODELS[fmt]
    stack = make_stack(fmt, {chat: 8000}, summarizer="upstream", summarizer_model=small)
    stack.standin.for_model(small, text=TEXT)
    loop = Loop(stack, fmt, chat)
    k = 0
    while not loop.summaries_asked():
        loop.turn(k)
        k += 1
        assert k < 40, "no summary was asked"
    assert [r["status"] for r in loop.summaries_asked()] == [200]
    stack.restart()  # type: ignore[attr-defined]
    for j in range(k, 60):
        loop.turn(j)
        chunks = chunks_of(loop.chat_requests()[-1])
        if chunks:
            break
    else:
        raise AssertionError("the loop never compacted")
    assert TEXT in chunks[0]
    assert len(loop.summaries_asked()) == 1
    assert any(r.endswith(f"summary written by the upstream's {small!r}")
               for r in loop.why()), loop.why()


@pytest.mark.parametrize(("setting", "fmt", "asked", "said"), [
    # one global name of the other family: an OpenAI chat's summaries went to its upstream
    # with a Claude name, which a real OpenAI refuses (every summary fell back)
    ("claude-haiku-4-5", "openai", "gpt-4o", "names no non-Claude model"),
    ("gpt-4o-mini", "anthropic", "claude-sonnet-4-5", "names no Claude model"),
    # one name per provider: each chat takes its own family's
    ("claude-haiku-4-5, gpt-4o-mini", "openai", "gpt-4o-mini", None),
    ("claude-haiku-4-5, gpt-4o-mini", "responses", "gpt-4o-mini", None),
    ("claude-haiku-4-5, gpt-4o-mini", "anthropic", "claude-haiku-4-5", None),
    # pasted with its newline: the name was sent as it was
    ("gpt-4o-mini\n", "openai", "gpt-4o-mini", None),
    ("  \n", "openai", "gpt-4o", "names no model"),
], ids=["claude-for-openai", "gpt-for-anthropic", "both-openai", "both-responses",
        "both-anthropic", "newline", "blank"])
def test_each_chat_asks_a_summarizer_of_its_own_family(make_stack, caplog, setting: str,
                                                       fmt: str, asked: str,
                                                       said: str | None) -> None:
    caplog.set_level(logging.WARNING, logger="ctxlayer.gateway")
    chat, _ = MODELS[fmt]
    stack = make_stack(fmt, {chat: 8000}, summarizer="upstream", summarizer_model=setting)
    loop = Loop(stack, fmt, chat)
    _until_compacted(loop, after=6)
    models = [r["body"]["model"] for r in loop.summaries_asked()]
    assert models and set(models) == {asked}, models
    told = [r.getMessage() for r in caplog.records if "summarizer_model" in r.getMessage()]
    if said is None:
        assert told == []
    else:
        assert len(told) == 1 and said in told[0], told
