"""The newest question's cut is decided afresh each turn from the room that turn has: a cut
of an older message stays for the cached prefix, the newest question's does not stay
narrower than the room allows (the fuzz probe's shapes: an earlier exchange, then a
1,663-character question beside a 1000x800 screenshot at a budget of 1,200). Carried over,
the question stayed at 52 characters once the screenshot was taken out (63 tokens of 1,200
sent), once the budget rose to 2,000, and in another chat that opened alike (OpenAI: a
497-character question cut to 52 because the other chat's was cut so first)."""

from __future__ import annotations

import pytest
from images import png

from ctxlayer.core.formats import decode
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.prepare.model import alike_prefix
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message

WORDS = WordTokenizer()
QUESTION = ("QSTART the parser crashes on the input shown in the screenshot. "
            + " ".join(f"detail{i} line{i}" for i in range(100)) + " QEND what is wrong?")
ANSWER = "answer " + " ".join(f"value{i} token{i}" for i in range(150))




def anthropic(image: bool) -> list[Message]:
    last: list[dict] = [{"type": "text", "text": QUESTION}]
    if image:
        last.insert(0, {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                    "data": png(1000, 800)}})
    return decode("anthropic", {
        "model": "claude-sonnet-4-5", "max_tokens": 100, "system": "You help with code.",
        "messages": [{"role": "user", "content": "Q1: how is the token budget computed?"},
                     {"role": "assistant", "content": ANSWER},
                     {"role": "user", "content": last}]}, WORDS).messages


def openai(image: bool) -> list[Message]:
    last: list[dict] = [{"type": "text", "text": QUESTION}]
    if image:
        last.append({"type": "image_url", "image_url": {
            "url": "data:image/png;base64," + png(1000, 800)}})
    return decode("openai", {"model": "gpt-4o", "messages": [
        {"role": "system", "content": "You help with code."},
        {"role": "user", "content": "Q1: how is the token budget computed?"},
        {"role": "assistant", "content": ANSWER},
        {"role": "user", "content": last}]}, WORDS).messages


CHATS = {"anthropic": anthropic, "openai": openai}


def question(turn) -> str:
    return turn.messages[-1].content


def first_cut(chat, budget: int):
    first = prepare_turn(None, chat(True), budget, WORDS)
    assert len(question(first)) < len(QUESTION)  # the shape the bug needs: cut at first
    return first


@pytest.mark.parametrize("fmt", CHATS)
def test_a_question_cut_beside_a_screenshot_is_whole_once_the_screenshot_is_taken_out(fmt):
    """The same chat, the screenshot taken out of its question, the same budget: the
    question goes whole, as the same request alone does (was: its cut beside the
    screenshot, 52 characters)."""
    chat = CHATS[fmt]
    budget = 1200 if fmt == "anthropic" else 1000
    first = first_cut(chat, budget)
    then = prepare_turn(first.state, chat(False), budget, WORDS)
    alone = prepare_turn(None, chat(False), budget, WORDS)
    assert question(alone) == QUESTION
    assert question(then) == QUESTION
    assert then.messages[-1].parts is None and then.tokens <= budget


@pytest.mark.parametrize("fmt", CHATS)
def test_a_question_cut_beside_a_screenshot_takes_a_budget_that_grew(fmt):
    """The same request, the budget raised (max_tokens lowered, or another chat opening
    alike starting from this one's window at its own budget): the question is cut afresh
    from that room, whole where the same request alone is (was: 1,135 of 2,000 sent, the
    question at its first cut)."""
    chat = CHATS[fmt]
    first = first_cut(chat, 1200 if fmt == "anthropic" else 1000)
    then = prepare_turn(first.state, chat(True), 2000, WORDS)
    alone = prepare_turn(None, chat(True), 2000, WORDS)
    assert question(alone) == QUESTION
    assert question(then) == QUESTION and then.tokens <= 2000


def test_a_message_whose_parts_changed_is_not_alike():
    """A screenshot taken out of a message, or put into it, changes it (its cut is not
    carried); only what a part is said to cost may differ (a thinking block costed whole on
    one turn and by its text on the next)."""
    q = Message(role="user", content="what is wrong?", parts=["image 1000x800 (1067 tokens)"],
                parts_tokens=1067)
    bare = Message(role="user", content="what is wrong?")
    assert alike_prefix([q], [bare], 0) == 0
    assert alike_prefix([bare], [q], 0) == 0
    other = Message(role="user", content="what is wrong?", parts=["image 800x600 (640 tokens)"],
                    parts_tokens=640)
    assert alike_prefix([q], [other], 0) == 0
    thought = Message(role="assistant", content="done", parts=["thinking (212 tokens)"],
                      parts_tokens=212)
    read = Message(role="assistant", content="done", parts=["thinking (1 token)"],
                   parts_tokens=1)
    assert alike_prefix([thought], [read], 0) == 1


@pytest.mark.parametrize("fmt", CHATS)
def test_a_budget_that_only_wobbles_keeps_the_questions_cut(fmt):
    """A budget a few tokens bigger (a calibration from the provider's usage, the tools
    counted anew) keeps the question's cut: cut afresh, an agent's task, before every summary,
    moved the cached prefix on each wobble."""
    chat = CHATS[fmt]
    budget = 1200 if fmt == "anthropic" else 1000
    first = first_cut(chat, budget)
    then = prepare_turn(first.state, chat(True), budget + budget // 100, WORDS)
    assert question(then) == question(first)
    grown = prepare_turn(first.state, chat(True), budget + budget // 5, WORDS)
    assert len(question(grown)) > len(question(first))
