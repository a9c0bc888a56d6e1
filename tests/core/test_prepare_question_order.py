"""A chat read in the order it was had: the summaries of the work on earlier questions, then
the question the client works on now and its work. A Claude Code session continued twice
(`--continue`: two questions, each with a long tool loop, then a third) in a small window
went out as Q0's summary, then Q2, then a summary whose "Asked" was Q1 and whose actions held
Q2's first call: one chunk stood for messages on both sides of Q2, which a step keeps whole,
and Q2 went before it. A model reading that acts on the previous question."""

from __future__ import annotations

import pytest
from agentloops import bash_loop

from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message, ToolCall

WORDS = WordTokenizer()
CLAUDE_MD = ("<system-reminder>\nContents of /repo/CLAUDE.md (project instructions, checked "
             "into the codebase):\n\n- Use pnpm, not npm or yarn.\n</system-reminder>\n")




def continued(questions: int, rounds: int, first: str = "") -> list[Message]:
    """Claude Code continued: each question answered after six tool calls, the newest one
    ``rounds`` calls in."""
    msgs = [Message(role="system", id="sys", content="You are Claude Code. " * 30)]
    for q in range(questions):
        ask = f"QUESTION {q}: check the build log again, many times."
        msgs.append(Message(role="user", id=f"q{q}", content=(first + ask) if q == 0 else ask))
        msgs += bash_loop(q, rounds if q == questions - 1 else 6)
        if q < questions - 1:
            msgs.append(Message(role="assistant", id=f"ans{q}", content=f"Answer {q}: passed."))
    return msgs


def in_order(turn, question: str) -> None:
    """No chunk stands for messages on both sides of ``question``; each summary of messages
    before it is read before it, each of messages after it after it."""
    at = next(i for i, m in enumerate(turn.state.messages) if m.id == question)
    ids = [m.id for m in turn.messages]
    assert question in ids
    for c in turn.state.chunks:
        named = [e.index for e in c.audit]
        assert named == sorted(named)
        assert not named[0] < at < named[-1], (question, [e.message_id for e in c.audit])
    for k, m in enumerate(turn.messages):
        if m.kind == "summary":
            c = next(c for c in turn.state.chunks if c.message.content == m.content)
            assert (c.audit[-1].index < at) == (k < ids.index(question)), (question, ids)


@pytest.mark.parametrize("first", ["", CLAUDE_MD], ids=["plain", "with CLAUDE.md"])
@pytest.mark.parametrize("budget", [1500, 1800, 2200, 2500])
def test_each_question_is_read_after_the_summaries_of_the_work_before_it(budget, first):
    state, summarized = None, set()
    for questions in (1, 2, 3):
        for rounds in range(1, 7):
            turn = prepare_turn(state, continued(questions, rounds, first), budget, WORDS)
            state = turn.state
            in_order(turn, f"q{questions - 1}")
            for e in turn.dropped:
                # each message is told summarized once, as before
                assert e.action != "summarized" or e.message_id not in summarized, e
                summarized.add(e.message_id)
    assert len(turn.state.chunks) >= 2
    # the newest question's summaries say what was asked before it, not after it
    ids = [m.id for m in turn.messages]
    before = [m.content for m in turn.messages[:ids.index("q2")] if m.kind == "summary"]
    assert any("QUESTION 1" in t for t in before)
    assert not any("QUESTION 1" in m.content for m in turn.messages[ids.index("q2"):])


def _agent_chat(seed: int):
    """A seeded agent chat (the second review probe's): a CLAUDE.md in the first user message,
    2-6 questions, each followed by 1-9 tool calls with outputs of 3 to 300 lines; yields
    (the messages so far, the budget, the newest question's index) after every call."""
    import random

    rng = random.Random(seed)
    budget = rng.choice([1200, 1500, 2000, 3000, 5000])
    rules = ("<system-reminder>\nContents of /repo/CLAUDE.md (project instructions, checked "
             "into the codebase):\n\n" + "\n".join(f"- Use tool{k} for job{k}." for k in range(12))
             + "\n</system-reminder>\n")
    msgs = [Message(role="system", id="sys", content="You are an agent. " * rng.choice([5, 40]))]
    call = 0
    for q in range(rng.randint(2, 6)):
        ask = f"QUESTION {q}: " + " ".join(f"w{q}_{j}" for j in range(rng.choice([8, 40, 200])))
        msgs.append(Message(role="user", id=f"q{q}", content=rules + ask if q == 0 else ask))
        at = len(msgs) - 1
        for k in range(rng.randint(1, 9)):
            call += 1
            lines = rng.choice([3, 10, 40, 120, 300])
            msgs += [Message(role="assistant", id=f"a{call}", content="Let me check.",
                             tool_calls=[ToolCall(id=f"c{call}", name="Bash",
                                                  arguments=f'{{"command": "run {q} {k}"}}')]),
                     Message(role="tool", id=f"o{call}", tool_call_id=f"c{call}", content="\n".join(
                         f"line {j}: step {j} of run {q}.{k} value {rng.randint(0, 999)}"
                         for j in range(lines)))]
            yield list(msgs), budget, at
        msgs.append(Message(role="assistant", id=f"ans{q}", content=f"Answer {q}: done."))


@pytest.mark.parametrize("seed", range(48, 64))
def test_no_chunk_stands_for_both_sides_of_the_newest_question_with_a_claude_md(seed):
    """The second review probe: with a CLAUDE.md kept whole in the first message, 62 of 200
    such chats had a chunk standing for messages on both sides of the newest question (the
    last resort merged every chunk into one): seed 61 went out as sys, q0, q2, a summary whose
    "Asked" was QUESTION 1 holding q2's first calls."""
    state = None
    for msgs, budget, at in _agent_chat(seed):
        turn = prepare_turn(state, msgs, budget, WORDS)
        state = turn.state
        assert turn.tokens <= budget
        for c in turn.state.chunks:
            named = [e.index for e in c.audit]
            assert not (named and named[0] < at < named[-1]), (seed, len(msgs))
