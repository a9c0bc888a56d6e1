"""Images the gateway cannot read (sent by a URL or a Files API id) are costed by a guess
(1,600 tokens for Claude, 1,105 by OpenAI's tiles for a 1920x1080): their labels say so and a
request over its budget only by those guesses is sent with a notice, never refused, as for
unseen documents (test_unseen_files.py). Before, such an image was labelled "image (1600
tokens)" like one whose size was read, and 13 screenshots by URL and a question over the
budget by their guesses alone were refused (pinned_over_budget)."""

from __future__ import annotations

import pytest

from ctxlayer.core.errors import ContextError
from ctxlayer.core.formats import decode
from ctxlayer.core.guessed import guessed
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import WordTokenizer

WORDS = WordTokenizer()
CLAUDE, TILES = 1600, 1105  # an image of unknown size, by each rule
URL = "https://example.com/screenshot.png"


def anthropic(images: list[dict]) -> dict:
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [
        {"role": "user", "content": [*images, {"type": "text", "text": "What changed?"}]}]}


def chat(image_url: dict) -> dict:
    return {"model": "gpt-4o", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": image_url}, {"type": "text", "text": "x"}]}]}


def responses(image: dict) -> dict:
    return {"model": "gpt-4o", "input": [{"role": "user", "content": [
        {"type": "input_image", **image}, {"type": "input_text", "text": "x"}]}]}


def by_url(n: int) -> list[dict]:
    return [{"type": "image", "source": {"type": "url", "url": f"{URL}?{k}"}} for k in range(n)]


UNSEEN = {
    "anthropic URL": ("anthropic", anthropic(by_url(1)), "by URL", CLAUDE),
    "anthropic file_id": ("anthropic", anthropic([{"type": "image", "source": {
        "type": "file", "file_id": "file_011img"}}]), "by file_id", CLAUDE),
    "chat URL": ("openai", chat({"url": URL}), "by URL", TILES),
    "chat URL to Claude": ("openai", {**chat({"url": URL}), "model": "claude-sonnet-4-5"},
                           "by URL", CLAUDE),
    "responses URL": ("responses", responses({"image_url": URL}), "by URL", TILES),
    "responses file_id": ("responses", responses({"file_id": "file-1"}), "by file_id", TILES),
}


@pytest.mark.parametrize("case", UNSEEN)
def test_an_unseen_image_says_its_cost_was_guessed(case):
    fmt, body, how, tokens = UNSEEN[case]
    question = decode(fmt, body, WORDS).messages[-1]
    assert question.parts == [f"image {how}, unseen ({tokens} tokens)"]
    assert guessed([question]).tokens == tokens == question.parts_tokens


@pytest.mark.parametrize("fmt, body", [
    ("openai", chat({"url": URL, "detail": "low"})),  # 85 whatever its size: no guess
    ("openai", chat({"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB"})),
    ("responses", responses({"image_url": URL, "detail": "low"})),
])
def test_an_image_whose_cost_is_known_is_not_a_guess(fmt, body):
    question = decode(fmt, body, WORDS).messages[-1]
    assert guessed([question]).tokens == 0 and "unseen" not in question.parts[0]


def test_a_question_over_the_budget_only_by_unseen_images_is_sent_saying_so():
    msgs = decode("anthropic", anthropic(by_url(13)), WORDS).messages
    budget = 12 * CLAUDE  # under the guesses, over what the text costs
    turn = prepare_turn(None, msgs, budget, WORDS)  # was refused: pinned_over_budget
    assert turn.messages[-1].parts_tokens == 13 * CLAUDE and turn.tokens > budget
    assert turn.notice and f"over the budget of {budget}" in turn.notice
    assert f"13 images by URL counted at {CLAUDE} tokens each, unseen" in turn.notice


def test_a_request_over_the_budget_by_what_it_shows_beside_images_is_still_refused():
    body = {**anthropic(by_url(2)), "system": "rule " * 5000}
    with pytest.raises(ContextError) as refused:
        prepare_turn(None, decode("anthropic", body, WORDS).messages, 4000, WORDS)
    assert refused.value.kind == "pinned_over_budget"
