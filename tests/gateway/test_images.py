"""A chat of screenshots through the real gateway into a 4,096-token window: every image
costs what the provider's published rule says (the stand-in reads the size from the image
itself, apart from ctxlayer's own reading), so a chat of them is fitted by what they cost and
every request the strict stand-in receives is within its window, the newest image in it:
Anthropic, Chat Completions and Responses."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from gateway_stack import Stack, small_stack
from providers.payloads import b64, png
from test_fitting import prose

#: an 800 x 600 screenshot: 640 tokens for Anthropic, 765 for OpenAI at high detail
SHOT = b64(png(800, 600))
TURNS = 8  # eight screenshots: over 5,000 tokens of images alone


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with small_stack(tmp_path_factory.mktemp("images")) as stack:
        yield stack


def converse(small: Stack, path: str, image: dict, text: str,
             send: Callable[[list[dict]], str]) -> tuple[list[dict], dict]:
    """TURNS user turns, each a screenshot and a question, each answered; returns the
    conversation and the last request the stand-in received, after checking them all."""
    small.standin.reset()
    history: list[dict] = []
    for t in range(TURNS):
        history.append({"role": "user", "content": [
            image, {"type": text, "text": f"screenshot {t}: " + prose(t, 60)}]})
        history.append({"role": "assistant", "content": send(history)})
    seen = [r for r in small.standin.requests() if r["path"] == path]
    assert len(seen) == TURNS
    for r in seen:
        assert r["status"] == 200 and r["problems"] == [], r["problems"]
    assert seen[-1]["prompt_tokens"] + 200 <= 4096
    return history, seen[-1]["body"]


def test_anthropic_screenshots_are_fitted_by_what_they_cost(small):
    client = small.anthropic()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": SHOT}}
    history, last = converse(small, "/v1/messages", image, "text", lambda msgs: (
        client.messages.create(model="standin-small", max_tokens=200, messages=msgs)
        .content[0].text))
    sent = last["messages"][-1]["content"]
    assert sent[0] == image and f"screenshot {TURNS - 1}" in sent[1]["text"]


def test_openai_screenshots_are_fitted_by_what_they_cost(small):
    client = small.openai()
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{SHOT}",
                                                "detail": "high"}}
    history, last = converse(small, "/v1/chat/completions", image, "text", lambda msgs: (
        client.chat.completions.create(model="standin-small", max_tokens=200, messages=msgs)
        .choices[0].message.content))
    assert last["messages"][-1] == history[-2]


def test_responses_screenshots_are_fitted_by_what_they_cost(small):
    client = small.openai()
    image = {"type": "input_image", "image_url": f"data:image/png;base64,{SHOT}",
             "detail": "high"}
    history, last = converse(small, "/v1/responses", image, "input_text", lambda items: (
        client.responses.create(model="standin-small", max_output_tokens=200, input=items,
                                store=False).output_text))
    assert last["input"][-1] == history[-2]
