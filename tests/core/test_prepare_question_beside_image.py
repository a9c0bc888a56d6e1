"""A question beside a screenshot keeps its text's head and tail in the room the screenshot
leaves (the screenshot is never cut): the last resort's sizes for the question are its parts
and those shares of the room they leave, not shares of the budget the screenshot alone
passed (the fuzz probe's shapes). Before, a 1,663-character question beside a 1000x800 PNG
kept 52 characters at a budget of 1,200, its end ("QEND what is wrong?") lost and 65 tokens
unused; a pasted 168-character line without blanks beside a 2x2 PNG went out as
'[... 168 chars omitted ...]' alone, the marker taking the 16 tokens its text was left."""

from __future__ import annotations

import pytest
from images import png

from ctxlayer.core.compress.shorten import shorten
from ctxlayer.core.formats import decode
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.tokenizers import counter_for

CLAUDE = counter_for("claude-sonnet-4-5")
GPT = counter_for("gpt-4o")
QUESTION = ("QSTART the parser crashes on the input shown in the screenshot. "
            + " ".join(f"detail{i} line{i}" for i in range(100)) + " QEND what is wrong?")
ANSWER = "answer " + " ".join(f"value{i} token{i}" for i in range(150))
#: a pasted line with no blank in it: cut by characters
PASTED = ("Q37 c1: CbD886335+13a4FDb2b30aEFAc7a453FBfc0aF+07d874bb024a7ebFd9c5fA+8cC21E9ef6"
          "+Fadc572d76EfEe2+b98Aedc650F3cE+f5/e35EC9D+B26C1D+5BffD3F90cC3bC8Ddcd3eEb"
          "+7139A46fc+3e9D")




def screenshot_asked():
    return decode("anthropic", {
        "model": "claude-sonnet-4-5", "max_tokens": 100, "system": "You help with code.",
        "messages": [
            {"role": "user", "content": "Q1: how is the token budget computed?"},
            {"role": "assistant", "content": ANSWER},
            {"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": png(1000, 800)}},
                {"type": "text", "text": QUESTION}]}]}, CLAUDE).messages


def pasted_asked():
    return decode("openai", {"model": "gpt-4o", "messages": [
        {"role": "system", "content": "Chat c1. function596 token931 value219"},
        {"role": "user", "content": [
            {"type": "text", "text": PASTED},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + png(2, 2)}}]},
    ]}, GPT).messages


def test_a_question_beside_a_screenshot_keeps_its_head_and_tail():
    """At 1,200 tokens, the screenshot taking 1,067 of them: the question's first and last
    words go, and the request uses the budget (was: 52 characters, 1,135 of 1,200)."""
    msgs = screenshot_asked()
    assert msgs[-1].parts_tokens > 1200 // 2  # the screenshot alone passes half the budget
    turn = prepare_turn(None, msgs, 1200, CLAUDE)
    asked = turn.messages[-1]
    assert asked.parts == msgs[-1].parts and turn.tokens <= 1200
    assert asked.content.startswith("QSTART the parser crashes")
    assert "QEND what is wrong?" in asked.content
    assert turn.tokens >= 1200 - 40, turn.tokens


@pytest.mark.parametrize("budget", range(300, 393, 6))
def test_a_pasted_line_beside_an_image_keeps_its_ends(budget):
    """A 168-character line without blanks (117 tokens) beside a 2x2 PNG, the system prompt
    alone before it (393 tokens whole): cut by characters, it keeps its first and last
    characters at every budget under that (was: the omission marker alone at most, its head
    alone at the others)."""
    msgs = pasted_asked()
    turn = prepare_turn(None, msgs, budget, GPT)
    sent = turn.messages[-1].content
    assert turn.tokens <= budget and sent != PASTED
    assert sent.startswith("Q37 c1:") and sent.endswith("3e9D"), sent


@pytest.mark.parametrize("cap", [8, 12, 16, 20])
def test_a_line_without_blanks_cut_small_keeps_both_ends(cap):
    """A cap that the "[... N chars omitted ...]" marker would take most of keeps the ends
    around an ellipsis: the marker alone said nothing of the text."""
    short = shorten(PASTED, cap, GPT)
    assert short is not None and GPT.count(short.text) <= cap
    head, _, tail = short.text.partition("…")
    assert PASTED.startswith(head) and head and PASTED.endswith(tail) and tail, short.text
