"""A session's newest step (an agent's call with its results after a summary) stays beside the
summary when its thinking (never shortened) makes it most of the history share: the window
held no question, took every turn for an oldest one and dropped it ("oldest turns dropped"),
and the request was the summary alone. One over the share even shortened goes, said for what
it is."""

from __future__ import annotations

from test_assembly import COUNTER, build, check_fits, history_part, inp

from ctxlayer.core.assembly import Compaction, assemble
from ctxlayer.protocol import Message, ToolCall


def steps(newest_thinking: int) -> list[Message]:
    out = [Message(role="user", id="task", content="Refactor the steps.")]
    for k in range(10):
        thinking = 40 if k < 9 else newest_thinking
        call = ToolCall(id=f"c{k}", name="read", arguments=f'{{"path": "m{k}.py"}}')
        out += [Message(role="assistant", id=f"a{k}", content=f"Step {k}: " + "looked. " * 40,
                        parts_tokens=thinking, parts=[f"thinking ({thinking} tokens)"],
                        tool_calls=[call]),
                Message(role="tool", id=f"t{k}", tool_call_id=f"c{k}",
                        content=f"def step_{k}():\n" + "    pass\n" * 200)]
    return out


def test_the_newest_step_with_long_thinking_is_kept_beside_the_summary():
    out = assemble(build(steps(3800)), Compaction(), inp(4000), COUNTER)
    check_fits(out, 4000)
    sent = [m.id for m in history_part(out)]
    assert any(m.kind == "summary" for m in history_part(out))
    assert sent[-2:] == ["a9", "t9"], sent
    assert out.result.tokens.total >= 0.9 * 4000


def test_a_newest_step_over_the_share_even_shortened_goes_said_for_what_it_is():
    out = assemble(build(steps(5000)), Compaction(), inp(4000), COUNTER)
    check_fits(out, 4000)
    gone = {e.message_id: e.reason for e in out.result.dropped}
    assert set(gone) >= {"a9", "t9"}
    assert gone["a9"].startswith("the newest exchange") and "never shortened" in gone["a9"]
    assert not any(e.reason.startswith("oldest turns") for e in out.result.dropped)
