"""A chunk of a prose chat: its ledger (paths, commands, errors, tests) stays nearly empty, so
the decided / open part, which holds what was answered, takes more of the chunk's room."""

from __future__ import annotations

from ctxlayer.core.prepare.model import DEFAULT_POLICY
from ctxlayer.core.prepare.summaries import make_chunk, sizes
from ctxlayer.core.tokens import WordTokenizer, message_tokens
from ctxlayer.protocol import Message


def test_a_chunk_of_four_answered_questions_keeps_every_answer_beside_an_empty_ledger() -> None:
    # a step that goes down to 0.65 of the budget took four such exchanges into one chunk
    # where it took three at 0.75: its 204 characters of decided / open kept the newest two
    # answers (the gateway's web-search chat lost City0 and City1), beside 2,553 characters
    # of ledger with nothing to name
    msgs: list[Message] = []
    for k in range(4):
        msgs += [Message(role="user", id=f"q{k}", content=f"Question {k}: the capital of "
                         f"country {k}?"),
                 Message(role="assistant", id=f"a{k}", content=f"ANSWER{k}: the capital of "
                         f"country {k} is City{k}.")]
    counter, room = WordTokenizer(), 3407
    assert sizes(DEFAULT_POLICY, room).summary == 204
    tokens = [message_tokens(m, counter) for m in msgs]
    chunk = make_chunk(msgs, msgs, list(range(1, 9)), tokens, 1, 9, counter, DEFAULT_POLICY,
                       room)
    text = chunk.message.content
    assert [k for k in range(4) if f"City{k}" not in text] == [], text
