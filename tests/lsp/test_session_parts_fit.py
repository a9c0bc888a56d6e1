"""Through the real daemon: what a Claude session sends fits its budget as ctx/count (the
gateway's counter) counts it, and its tokens are that count. The session priced OpenAI images
at OpenAI's rate and every earlier turn's thinking in full, fixed when appended: it sent
21,724 tokens for a budget of 8,000, and compacted a chat of 2,661 tokens at 12,000; an
assembly into another format reported the parts that format does not send."""

from __future__ import annotations

import json

import pytest
import pytest_asyncio
from conftest import RawDaemon, hermetic_env, make_repo
from images import png as png_head

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

MODEL = "claude-sonnet-4"


def png(width: int, height: int) -> str:
    """A PNG's header, 64 bytes after it."""
    return png_head(width, height, 64)


SHOT = "data:image/png;base64," + png(1024, 768)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def daemon(tmp_path_factory):
    base = tmp_path_factory.mktemp("priced")
    d = await RawDaemon.start(env=hermetic_env(base / "world"))
    await d.initialize(make_repo(base / "repo"))
    yield d
    assert await d.close() == 0


async def ask(daemon: RawDaemon, method: str, params: dict) -> dict:
    daemon.asked = getattr(daemon, "asked", 0) + 1
    out = await daemon.request(f"q{daemon.asked}", method, params)
    assert "result" in out, out
    return out["result"]


async def session(daemon: RawDaemon, sid: str, fmt: str, messages: list, budget: int) -> dict:
    await ask(daemon, "ctx/session/open", {"sessionId": sid, "model": MODEL, "budget": budget})
    return await ask(daemon, "ctx/session/append", {"sessionId": sid, "messages": messages,
                                                    "format": fmt})


async def sent(daemon: RawDaemon, sid: str, fmt: str) -> tuple[dict, int]:
    """(the assembly, ctx/count of what it sent)."""
    out = await ask(daemon, "ctx/assemble", {"sessionId": sid, "format": fmt})
    params = {"messages": out["messages"], "format": fmt, "model": MODEL}
    if out.get("system") is not None:
        params["system"] = out["system"]
    return out, (await ask(daemon, "ctx/count", params))["total"]


async def test_openai_screenshots_in_a_claude_session_fit_its_budget(daemon):
    turns = []
    for k in range(20):
        turns += [{"role": "user", "content": [
                      {"type": "text", "text": f"screenshot {k}: what changed?"},
                      {"type": "image_url", "image_url": {"url": SHOT, "detail": "low"}}]},
                  {"role": "assistant", "content": f"In screenshot {k} the button moved left."}]
    turns.append({"role": "user", "content": "summarize all changes"})
    budget = await session(daemon, "shots", "openai", turns, 8000)
    assert budget["used"] > 8000  # all 20 are over it: said, not hidden
    for fmt in ("anthropic", "openai"):
        out, counted = await sent(daemon, "shots", fmt)
        assert out["tokens"]["total"] == counted <= 8000
        assert json.dumps(out["messages"]).count(SHOT[:60]) < 20


def task(k: int, question: str) -> list[dict]:
    """A task of an agent's: the question, sealed thinking and a call, its result."""
    return [{"role": "user", "content": question},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "", "signature": "E" * 8000 + str(k)},
                {"type": "tool_use", "id": f"t{k}", "name": "read",
                 "input": {"path": f"module_{k}.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                          "content": f"def f{k}(): return {k}"}]}]


async def test_finished_tasks_thinking_is_not_charged_again(daemon):
    msgs = []
    for k in range(12):
        msgs += task(k, f"task {k}: fix bug B{k} in module_{k}.py")
        msgs.append({"role": "assistant", "content": f"Fixed B{k}."})
    # the loop under way: its thinking is read again, the 12 finished ones' are not
    msgs += task(12, "now what did you change in module_3.py?")
    budget = await session(daemon, "tasks", "anthropic", msgs, 12000)
    out, counted = await sent(daemon, "tasks", "anthropic")
    assert not out["compacted"] and len(out["messages"]) == len(msgs)
    assert out["tokens"]["total"] == counted == budget["used"] < 4000
    # as openai no thinking goes: neither fitted nor reported
    other, counted = await sent(daemon, "tasks", "openai")
    assert other["tokens"]["total"] == counted < out["tokens"]["total"] - 1000
