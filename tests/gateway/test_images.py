"""A chat of screenshots through the real gateway into a 4,096-token window: every image
costs what the provider's published rule says (the stand-in reads the size from the image
itself, apart from ctxlayer's own reading), so a chat of them is fitted by what they cost and
every request the strict stand-in receives is within its window, the newest image in it:
Anthropic, Chat Completions and Responses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_stack import Stack, start_stack, stop_stack
from providers.payloads import b64, png
from providers.standin import StandinThread
from test_fitting import prose

#: an 800 x 600 screenshot: 640 tokens for Anthropic, 765 for OpenAI at high detail
SHOT = b64(png(800, 600))


@pytest.fixture(scope="module")
def small(world: Path) -> Iterator[Stack]:
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CONFIG_HOME", str(world / "config"))
    (world / "state-images").mkdir()
    with StandinThread(windows={"standin-small": 4096}) as thread:
        gateway, state = start_stack(thread, world / "workspace", world / "state-images",
                                     models={"standin-small": 4096})
        try:
            yield Stack(thread, gateway, state)
        finally:
            stop_stack(thread, gateway, state)
            mp.undo()


def check(small: Stack, turns: int) -> list[dict]:
    seen = small.model_requests()
    assert len(seen) == turns
    for r in seen:
        assert r["status"] == 200 and r["problems"] == [], r["problems"]
    return seen


def test_anthropic_screenshots_are_fitted_by_what_they_cost(small):
    small.standin.reset()
    client, msgs = small.anthropic(), []
    for t in range(8):  # eight screenshots: 5,120 tokens of images alone
        msgs.append({"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": SHOT}},
            {"type": "text", "text": f"screenshot {t}: " + prose(t, 60)}]})
        answer = client.messages.create(model="standin-small", max_tokens=200, messages=msgs)
        msgs.append({"role": "assistant", "content": answer.content[0].text})
    seen = check(small, 8)
    last = seen[-1]["body"]["messages"][-1]["content"]
    assert last[0]["source"]["data"] == SHOT and "screenshot 7" in last[1]["text"]
    assert seen[-1]["prompt_tokens"] + 200 <= 4096


def test_openai_screenshots_are_fitted_by_what_they_cost(small):
    small.standin.reset()
    client, msgs = small.openai(), []
    for t in range(8):
        msgs.append({"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{SHOT}",
                                                "detail": "high"}},
            {"type": "text", "text": f"screenshot {t}: " + prose(t, 60)}]})
        answer = client.chat.completions.create(model="standin-small", max_tokens=200,
                                                messages=msgs)
        msgs.append({"role": "assistant", "content": answer.choices[0].message.content})
    seen = check(small, 8)
    assert seen[-1]["body"]["messages"][-1] == msgs[-2]
    assert seen[-1]["prompt_tokens"] + 200 <= 4096


def test_responses_screenshots_are_fitted_by_what_they_cost(small):
    small.standin.reset()
    client, items = small.openai(), []
    for t in range(8):
        items.append({"role": "user", "content": [
            {"type": "input_image", "image_url": f"data:image/png;base64,{SHOT}",
             "detail": "high"},
            {"type": "input_text", "text": f"screenshot {t}: " + prose(t, 60)}]})
        answer = client.responses.create(model="standin-small", max_output_tokens=200,
                                         input=items, store=False)
        items.append({"role": "assistant", "content": answer.output_text})
    seen = [r for r in small.standin.requests() if r["path"] == "/v1/responses"]
    assert len(seen) == 8
    for r in seen:
        assert r["status"] == 200 and r["problems"] == [], r["problems"]
    assert seen[-1]["body"]["input"][-1] == items[-2]
    assert seen[-1]["prompt_tokens"] + 200 <= 4096
