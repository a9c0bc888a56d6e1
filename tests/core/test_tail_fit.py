"""The verbatim tail's fit (core/assembly/tail.py): the turns after the newest question (an
agent's work on it, its reply) are the newest, not the oldest. A 12-token reply after a
question about the size of the room went as "oldest turns dropped: the history share is full"
while the question kept 2,737 tokens; the question now gives up to half of itself first."""

from __future__ import annotations

from ctxlayer.core.assembly.tail import Window, fit
from ctxlayer.core.tokens import CountCache, WordTokenizer, message_tokens
from ctxlayer.protocol import Message

COUNTER = CountCache(WordTokenizer())


def window(msgs: list[Message]) -> Window:
    return Window(messages=msgs, keys=[f"k{i}" for i in range(len(msgs))],
                  tokens=[message_tokens(m, COUNTER) for m in msgs], dropped=[], truncated=[])


def test_a_short_reply_after_a_long_question_is_kept_the_question_shortened():
    win = window([
        Message(role="user", id="q0", content="an older question " * 20),
        Message(role="assistant", id="a0", content="an older answer " * 20),
        Message(role="user", id="q1", content="\n".join(f"line {k} of the pasted log"
                                                        for k in range(600))),
        Message(role="assistant", id="a1", content="Looking at it now."),
    ])
    room = win.tokens[2] - 5  # the question alone is about the room
    fit(win, room, COUNTER, require_user=True)
    kept = [m.id for m in win.messages]
    assert kept == ["q1", "a1"], kept
    assert sum(win.tokens) <= room
    reasons = {e.message_id: e.reason for e in win.dropped}
    assert set(reasons) == {"q0", "a0"}
    assert all("oldest" in r for r in reasons.values())
    question = [e for e in win.truncated if e.message_id == "q1"]
    assert [e.reason for e in question] == [
        "shortened to keep the turns after it: the newest question is never dropped"]
    assert win.tokens[0] >= question[0].tokens_before // 2


def test_turns_after_the_question_that_cannot_stay_are_said_as_such():
    # too short to be shortened (under twice tail.MIN_SHORT): they stay whole or go
    work = [Message(role="assistant", id=f"w{k}", content=f"step {k} " + "output " * 30)
            for k in range(4)]
    question = Message(role="user", id="q", content="Fix the failing test. " * 40)
    win = window([question, *work])
    before = win.tokens[0]
    fit(win, before // 2 + win.tokens[-1] + 10, COUNTER, require_user=True)
    assert win.messages[0].id == "q", "the question is never dropped"
    assert win.tokens[0] >= before * 0.4, "it gives about half of itself at most"
    assert win.messages[-1].id == "w3", "the newest work stays"
    gone = {e.message_id: e.reason for e in win.dropped}
    assert set(gone) == {"w0", "w1", "w2"}
    assert all("oldest" not in r and "newest question" in r for r in gone.values()), gone


def test_answers_beside_images_keep_their_words_when_shortened():
    # their non-text parts (an image, thinking) are never shortened: a share of the
    # message's tokens as the text's cap had cut the two oldest answers to nothing, to save
    # what a quarter of their words would have saved as well
    msgs: list[Message] = []
    for k in range(4):
        msgs.append(Message(role="user", id=f"q{k}", content=f"What does chart {k} show?"))
        msgs.append(Message(
            role="assistant", id=f"a{k}", parts_tokens=800, parts=["image (800 tokens)"],
            content=f"ANSWER{k}: the chart shows " + " ".join(f"point{j} rises"
                                                           for j in range(150))))
    msgs.append(Message(role="user", id="q", content="And the next one?"))
    win = window(msgs)
    room = sum(win.tokens) - 600
    fit(win, room, COUNTER, require_user=True)
    assert [m.id for m in win.messages] == [m.id for m in msgs]  # none dropped
    assert sum(win.tokens) <= room
    for k in range(4):
        kept = win.messages[2 * k + 1].content
        assert kept.startswith(f"ANSWER{k}: the chart shows point0 rises"), kept
        assert "point149 rises" in kept  # its head and tail
