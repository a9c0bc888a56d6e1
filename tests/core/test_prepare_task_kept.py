"""The last resort keeps the summary holding the user's task, and outlines the newest tool
output further for its room: an OpenCode chat (budget 7,758, a system prompt and tools of
nearly all of it) dropped its 594-token summary, "32 left", beside a 569-token outline of the
newest `cat`, and the model lost the whole task. Here at the same proportions, in words."""

from __future__ import annotations

import random

from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message, ToolCall

BUDGET = 1200
SYSTEM = 1000  # words of the system prompt: what the client's prompt and tools take
TASK = "Run ./run_tests.sh, find the failing test and fix it. USERMARK-C1"


def shell(t: int, cmd: str, out: str) -> list[Message]:
    call = ToolCall(id=f"c{t}", name="bash", arguments=f'{{"command": "{cmd}"}}')
    return [Message(role="assistant", id=f"a{t}", content="", tool_calls=[call]),
            Message(role="tool", id=f"r{t}", tool_call_id=f"c{t}", content=out)]


def listing(r: random.Random, k: int, lines: int) -> str:
    return "\n".join(" ".join(f"v{k}_{r.randint(0, 99999)}" for _ in range(12))
                     for _ in range(lines))


def requests() -> list[list[Message]]:
    """12 reads and a failing run on the task, an answer, a new question after a restart,
    a `git diff` and a `cat` of 194 long lines."""
    r = random.Random(5)
    sent = [Message(role="system", id="sys", content="You are opencode. " * (SYSTEM // 3)),
            Message(role="user", id="task", content=TASK)]
    out = []
    for t in range(12):
        text = ("FAILED tests/test_math.py::test_q\nE   AssertionError: ZEBRA" if t == 2
                else listing(r, t, 3 + t % 5))
        sent = [*sent, *shell(t, f"cat data{t}.txt", text)]
        out.append(sent)
    sent = [*sent, Message(role="assistant", id="ans", content="Fixed it, the tests pass."),
            Message(role="user", id="q2", content="Which test failed? USERMARK-C2")]
    out.append(sent)
    sent = [*sent, *shell(20, "git diff", "(no output)")]
    out.append(sent)
    out.append([*sent, *shell(21, "cat data3.txt", listing(r, 3, 194))])
    return out


def test_the_summary_of_the_task_stays_and_the_newest_output_is_outlined_further():
    state = turn = None
    for sent in requests():
        turn = prepare_turn(state, sent, BUDGET, WordTokenizer())
        assert turn.tokens <= BUDGET
        state = turn.state
    summaries = "\n".join(m.content for m in turn.messages if m.kind == "summary")
    assert "USERMARK-C1" in summaries, [e.reason for e in turn.dropped]
    assert not [e for e in turn.dropped if e.reason.startswith("over budget")]
    ids = [m.id for m in turn.messages]
    # the question, a summary of the work on it after it, the newest exchange
    assert ids.index("q2") < ids.index("a21") == ids.index("r21") - 1
    newest = next(m for m in turn.messages if m.id == "r21")
    assert 48 <= len(newest.content.split()) < 150  # outlined further, still there
