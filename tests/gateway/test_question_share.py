"""A chat's newest question keeps its share of a small budget beside the summary an earlier
turn wrote: turn by turn through the gateway (budget 150 of gpt-4o), the chunk written when
Q2 came kept 96 tokens and Q3 went out at 32, its tail cut mid-word, where a fresh prepare
sent it at 94 with its tail. Real gateway, official SDK, the strict stand-in."""

from __future__ import annotations

import random

from gateway_stack import fresh_stack

MODEL = "gpt-4o"
WINDOW = 1350
MAX_TOKENS = 1200  # a budget of 150
WORDS = "parser token budget window cache prefix session editor stream answer question".split()


def chat() -> list[dict]:
    rng = random.Random(7)

    def prose(n: int) -> str:
        return " ".join(rng.choice(WORDS) + str(rng.randint(0, 999)) for _ in range(n))

    return [{"role": "system", "content": "Tiny chat. budget90 value476"},
            {"role": "user", "content": "Q1 " + prose(600)},
            {"role": "assistant", "content": "A1 " + prose(300)},
            {"role": "user", "content": "Q2 " + prose(60)},
            {"role": "assistant", "content": "A2 " + prose(50)},
            {"role": "user", "content": "Q3_NEWEST head " + prose(280) + " TAIL_OF_Q3"}]


def test_the_newest_question_keeps_its_share_beside_an_earlier_summary(tmp_path):
    messages = chat()
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW}) as stack:
        client = stack.openai()
        for k in (2, 4, 6):
            raw = client.chat.completions.with_raw_response.create(
                model=MODEL, max_tokens=MAX_TOKENS, messages=messages[:k])
            assert int(raw.headers["x-ctxlayer-tokens"]) <= WINDOW - MAX_TOKENS
        request = stack.model_requests()[-1]
    assert request["status"] == 200 and request["problems"] == [], request["problems"]
    sent = request["body"]["messages"]
    question = sent[-1]["content"]
    assert question.startswith("Q3_NEWEST head ") and question.endswith(" TAIL_OF_Q3"), question
    assert any(m["content"].startswith("[Summary of") for m in sent)
    # half of what the system prompt leaves of the 150 (about 140), in o200k tokens
    assert len(question.split()) >= 30, question
