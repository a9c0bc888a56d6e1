"""A session's newest messages are outlined or shortened before anything is summarized: the
newest tool output to the room the rest leaves it, a long message with a screenshot cut in its
text, the screenshot kept.

Before (probe71 s10, s6): a 2,400-line log (one FATAL line) as the newest tool output, at a
budget of 8,000, was assembled to 3,201 tokens: the plan priced the newest tool output whole,
it did not fit, and everything before the question was summarized, the log and its FATAL line
gone (ctx/trim of the same messages sent 7,693 with both). A first message of 300 functions and
a 1024x768 screenshot, at a budget of 4,000, was summarized into 1,445 tokens, the screenshot
gone and named nowhere in the result (ctx/trim kept it, the code cut).
The real daemon over stdio."""

from __future__ import annotations

import itertools
import json

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result
from images import png_whole

pytestmark = pytest.mark.e2e
_worlds = itertools.count()
FATAL = "FATAL: database connection refused on port 5433 (pg_hba.conf rejects host 10.0.0.7)"


def log_text() -> str:
    lines = [[f"[INFO] step {k} ok", f"\tat module.func{k}(file{k}.py:{k})", "    do()",
              f"ERROR: failure {k} in worker", f"KeyError: 'x{k}'", f"        nested {k}"][k % 6]
             for k in range(2400)]
    lines[2100] = FATAL
    return "\n".join(lines)




async def assembled(messages: list[dict], budget: int, model: str, fmt: str) -> dict:
    base = WORLD / f"outlines-first-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/session/open", {"sessionId": "s", "model": model,
                                                  "budget": budget})
        await result(daemon, "ctx/session/append", {"sessionId": "s", "format": fmt,
                                                    "messages": messages})
        return await result(daemon, "ctx/assemble", {"sessionId": "s", "format": fmt})
    finally:
        assert await daemon.close() == 0


@pytest.mark.parametrize("budget", [12000, 8000, 5000])
async def test_the_newest_log_is_outlined_to_the_room_not_summarized(budget):
    out = await assembled([
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "sh", "arguments": "{\"cmd\":\"make test\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": log_text()},
        {"role": "user", "content": "why did it fail?"}], budget, "gpt-4o", "openai")
    sent = json.dumps(out["messages"])
    assert [m["role"] for m in out["messages"]][-4:] == ["user", "assistant", "tool", "user"]
    assert "[Summary of" not in sent and not out["compacted"]
    assert FATAL in sent
    assert out["tokens"]["total"] >= 0.8 * budget, out["tokens"]


@pytest.mark.parametrize(("fmt", "model"), [("openai", "gpt-4o"),
                                            ("anthropic", "claude-sonnet-4-5")])
async def test_a_screenshot_is_kept_and_its_message_cut_before_any_summary(fmt, model):
    data = png_whole(1024, 768)
    code = ("Here is the code:\n```python\n"
            + "\n".join(f"def f{k}(x):\n    return x + {k}" for k in range(300))
            + "\n```\nWhat is wrong in the screenshot?")
    image = ({"type": "image_url", "image_url": {"url": "data:image/png;base64," + data}}
             if fmt == "openai" else
             {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                          "data": data}})
    out = await assembled([
        {"role": "user", "content": [{"type": "text", "text": code}, image]},
        {"role": "assistant", "content": "It looks fine."},
        {"role": "user", "content": "Are you sure? Look again at the screenshot."}],
        4000, model, fmt)
    sent = json.dumps(out["messages"])
    assert data in sent
    assert "[Summary of" not in sent and not out["compacted"]
    assert "It looks fine." in sent and "def f0(x)" in sent
    assert [e["messageId"] for e in out["truncated"]], out["truncated"]
