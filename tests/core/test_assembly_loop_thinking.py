"""The newest tool loop keeps its first step, which carries the turn's thinking (Claude
without interleaved thinking thinks once, in the loop's first assistant message): a summary
that replaced that step, or a fit that dropped it as the oldest step, left a loop whose first
kept assistant message opened with a tool call, which Anthropic refuses with thinking on.
With thinking on every step, any step may open what is kept: nothing is held."""

from __future__ import annotations

from test_assembly import COUNTER, build, check_fits, history_part, inp

from ctxlayer.core.assembly import Compaction, assemble
from ctxlayer.core.assembly.loop import opening_step
from ctxlayer.core.assembly.policy import CompactionPolicy
from ctxlayer.protocol import Message, ToolCall


def loop(steps: int, *, interleaved: bool = False, earlier: int = 3) -> list[Message]:
    """Earlier turns, the question, then `steps` calls each with a long result; thinking on
    the first step only (or on every step)."""
    out: list[Message] = []
    for r in range(earlier):
        out += [Message(role="user", id=f"u{r}", content=f"earlier task {r} " + "please " * 30),
                Message(role="assistant", id=f"r{r}", content=f"ok {r}")]
    out.append(Message(role="user", id="q", content="Fix the crash in the parser."))
    for s in range(steps):
        thinks = s == 0 or interleaved
        out += [Message(role="assistant", id=f"a{s}", content="",
                        tool_calls=[ToolCall(id=f"c{s}", name="read",
                                             arguments=f'{{"f": "p{s}.py"}}')],
                        parts_tokens=60 if thinks else None,
                        parts=["thinking (60 tokens)"] if thinks else None),
                Message(role="tool", id=f"t{s}", tool_call_id=f"c{s}",
                        content="\n".join(f"line {k}: value = compute({k}, {s})"
                                          for k in range(250)))]
    return out


def loop_opens_with_thinking(out) -> bool:
    sent = history_part(out)
    question = max(i for i, m in enumerate(sent) if m.role == "user" and m.tool_call_id is None)
    first = next(m for m in sent[question + 1:] if m.role == "assistant")
    return bool(first.parts) and first.parts[0].startswith("thinking")


def test_a_summary_that_replaced_the_first_step_leaves_it_shown_with_its_thinking():
    # (at 2,000 and 1,500 the results are outlined and nothing is summarized)
    for budget in (1000, 700, 500):
        out = assemble(build(loop(6)), Compaction(), inp(budget), COUNTER)
        check_fits(out, budget)
        sent = [m.id for m in history_part(out)]
        assert history_part(out)[0].kind == "summary", sent
        assert sent[-2:] == ["a5", "t5"], sent
        assert "a0" in sent and "t0" in sent, sent  # its call keeps its result
        assert loop_opens_with_thinking(out), (budget, sent)


def test_a_fit_that_drops_steps_of_the_loop_drops_those_after_the_first():
    # no compaction (a trigger never reached): the question stays, the steps after it give
    # way oldest first, but the first, with its thinking
    never = CompactionPolicy(trigger=50.0)
    out = assemble(build(loop(20, earlier=0)), Compaction(), inp(700, policy=never), COUNTER)
    check_fits(out, 700)
    sent = [m.id for m in history_part(out)]
    assert "a1" not in sent and sent[-2:] == ["a19", "t19"], sent
    assert sent[:3] == ["q", "a0", "t0"], sent
    assert loop_opens_with_thinking(out)


def test_interleaved_thinking_holds_nothing():
    assert opening_step(loop(6, interleaved=True)) is None
    assert opening_step(loop(6)) is not None
    out = assemble(build(loop(6, interleaved=True)), Compaction(), inp(1500), COUNTER)
    check_fits(out, 1500)
    sent = [m.id for m in history_part(out)]
    assert "a0" not in sent and sent[-2:] == ["a5", "t5"], sent
    assert loop_opens_with_thinking(out)
