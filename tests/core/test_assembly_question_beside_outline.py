"""The plan of a compaction keeps the newest question a message of its own when the tool
output after it can be outlined to make room (compaction.py `plan_stop`, `_Plan.outlined`).

Before: that output was counted at up to half the history share, the question's tail did not
fit, and the question went into the summary; the window then had room left it could not use
(8 rounds, a 900-word question, a call and a 200-line output: 1,714 of a budget of 2,000
sent). The window outlines the output before it shortens the question (tail.py `fit`)."""

from __future__ import annotations

import pytest
from test_assembly import COUNTER, build, check_fits, inp

from ctxlayer.core.assembly import Compaction, assemble
from ctxlayer.protocol import Message, ToolCall

QUESTION = "Final: why does this crash? " + " ".join(f"word99_{k}" for k in range(900))


def session() -> list[Message]:
    msgs: list[Message] = []
    for r in [*range(8), 99]:
        asked = QUESTION if r == 99 else f"Question {r}: " + " ".join(
            f"word{r}_{k}" for k in range(300))
        msgs += [Message(role="user", content=asked, id=f"u{r}"),
                 Message(role="assistant", content="", id=f"a{r}",
                         tool_calls=[ToolCall(id=f"c{r}", name="read", arguments="{}")]),
                 Message(role="tool", tool_call_id=f"c{r}", id=f"t{r}", content="\n".join(
                     f"line {k}: value = compute({k}, {r})" for k in range(200)))]
        if r != 99:
            msgs.append(Message(role="assistant", content=f"done {r}", id=f"d{r}"))
    return msgs


@pytest.mark.parametrize("budget", [2000, 2500, 2750])
def test_the_question_stays_and_the_output_after_it_is_outlined(budget):
    out = assemble(build(session()), Compaction(), inp(budget), COUNTER)
    check_fits(out, budget)
    sent = out.result.messages
    ids = [m.id for m in sent]
    assert ids[-3:] == ["u99", "a99", "t99"], ids
    assert sent[-3].content == QUESTION  # whole: the output gave way
    assert out.result.tokens.total >= 0.85 * budget, out.result.tokens
    summary = next(m for m in sent if m.kind == "summary")
    assert "Final: why does this crash?" not in summary.content


def agent_session(steps: int) -> list[Message]:
    """The rounds of `session`, then the question and an agent's loop of ``steps`` calls,
    each with a 200-line output."""
    msgs = [m for m in session() if not (m.id or "").endswith("99")]
    msgs.append(Message(role="user", content=QUESTION, id="u99"))
    for s in range(steps):
        msgs += [Message(role="assistant", content="", id=f"a99_{s}", tool_calls=[
                     ToolCall(id=f"c99_{s}", name="read", arguments=f'{{"f": "x{s}"}}')]),
                 Message(role="tool", tool_call_id=f"c99_{s}", id=f"t99_{s}", content="\n".join(
                     f"line {k}: value = compute({k}, {s})" for k in range(200)))]
    return msgs


@pytest.mark.parametrize(("steps", "budget"), [(3, 2000), (3, 3000), (6, 4000)])
def test_an_agents_loop_after_the_question_keeps_its_newest_steps(steps, budget):
    """Beside a loop of several steps the question's tail is counted as before: counted with
    its newest output outlined, the question "stayed" while the loop's newest steps went into
    the summary (the review probe: 1 of 3 steps sent, 2,255 tokens of 3,000), and later steps
    did not bring them back."""
    out = assemble(build(agent_session(steps)), Compaction(), inp(budget), COUNTER)
    check_fits(out, budget)
    outputs = [m.id for m in out.result.messages if (m.id or "").startswith("t99_")]
    assert outputs == [f"t99_{s}" for s in range(steps)], outputs
    assert out.result.tokens.total >= 0.85 * budget, out.result.tokens
