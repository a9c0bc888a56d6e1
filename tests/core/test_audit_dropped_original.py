"""A message a step outlined (or cut to its share, as the user's instruction files are) and
the last resort then dropped is audited by what the client sent: its own tokens and lines,
what ctx/restore gives back. The trim engine read the outline, and the audit named it: a
first message holding a CLAUDE.md and its task, 277 tokens and 17 lines, was listed as
`dropped 163 -> 0 ... user (13 lines)`."""

from __future__ import annotations

from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import WordTokenizer, message_tokens
from ctxlayer.protocol import Message, ToolCall

WORDS = WordTokenizer()
RULES = ("<system-reminder>\nContents of /repo/CLAUDE.md (project instructions, checked "
         "into the codebase):\n\n" + "\n".join(f"- Use tool{k} for job{k}." for k in range(12))
         + "\n</system-reminder>\n")


def _call(k: int, lines: int) -> list[Message]:
    out = "\n".join(f"line {j}: step {j} of run {k} value {j * 37 % 1000}" for j in range(lines))
    return [Message(role="assistant", id=f"a{k}", content="Let me check.", tool_calls=[
                ToolCall(id=f"c{k}", name="Bash", arguments=f'{{"command": "run {k}"}}')]),
            Message(role="tool", id=f"o{k}", tool_call_id=f"c{k}", content=out)]


def test_a_message_cut_then_dropped_by_the_last_resort_is_audited_at_its_own_size():
    task = "QUESTION 0: " + " ".join(f"w0_{j}" for j in range(200))
    msgs = [Message(role="system", id="sys", content="You are an agent. " * 40),
            Message(role="user", id="q0", content=RULES + task), *_call(1, 10),
            Message(role="assistant", id="ans0", content="Answer 0: done."),
            Message(role="user", id="q1", content="QUESTION 1: what failed in the newest run?"),
            *_call(2, 300)]
    turn = prepare_turn(None, msgs, 1200, WORDS)
    assert turn.tokens <= 1200
    by_id = {m.id: m for m in msgs}
    told = [e for e in (*turn.dropped, *turn.truncated) if e.message_id in by_id]
    assert "q0" in {e.message_id for e in told if e.action == "dropped"}
    for e in told:
        m = by_id[e.message_id]
        # q0 was 163 tokens and "(13 lines)", its cut instruction files'
        assert (e.tokens_before, e.summary) == (message_tokens(m, WORDS), describe(m)), e
