"""A live chat's newest tool loop, thinking only on its first step (Claude without interleaved
thinking), prepared under a budget that summarizes most of it. Anthropic reads the loop (the
assistant messages after the last user message that is not all tool results) as one turn whose
first assistant message must open with thinking. The result was [summaries and the question,
a5, t5]: the first step went into the summary. Now that step stays, unchanged, its result
outlined, and the summary of the steps between is read inside that result: a summary message
there, a user text, would start a new turn that a5 opens without thinking."""

from __future__ import annotations

import pytest
from test_assembly_loop_thinking import loop  # the same loop, assembled there

from ctxlayer.core.groups import ToolGroups, is_result
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message

COUNTER = WordTokenizer()
THOUGHT = "thinking (60 tokens)"


def turn_start(sent: list[Message]) -> int:
    """Where Anthropic's last turn starts: the last user message that is not a tool result
    (a summary is one: a user message of text)."""
    return max(i for i, m in enumerate(sent) if m.role == "user" and not is_result(m))


@pytest.mark.parametrize("budget", [2000, 1500, 1000, 700, 500])
def test_the_loop_opens_with_its_first_step_and_no_summary_inside_it(budget):
    msgs = loop(6)
    turn = prepare_turn(None, msgs, budget, COUNTER)
    sent = turn.messages
    ids = [m.id for m in sent]
    assert turn.tokens <= budget and turn.compacted, ids
    assert ids[-2:] == ["a5", "t5"] and "q" in ids, ids  # the newest exchange, the question
    start = turn_start(sent)
    assert sent[start].id == "q", ids  # nothing after the question opens a turn
    opening = sent[start + 1]
    # the loop's first step, unchanged: its thinking, its call
    assert opening == next(m for m in msgs if m.id == "a0"), ids
    # its call's result stays with it (outlined), the summary of the steps between inside it
    result = sent[start + 2]
    assert result.tool_call_id == "c0" and "[Summary of" in result.content, ids
    assert result.content.startswith("line 0: value = compute(0, 0)")
    # the calls shown are answered, the answers' calls shown
    groups = ToolGroups(sent)
    assert not groups.orphans
    shown = {c.id for m in sent for c in m.tool_calls or ()}
    assert shown == {m.tool_call_id for m in sent if is_result(m)}
    # everything cut is told: the steps between summarized, each by id
    told = {e.message_id for e in turn.dropped}
    assert {"a1", "t1", "a2", "t2", "a3", "t3", "a4", "t4"} <= told, told


def test_interleaved_thinking_keeps_the_loop_as_it_was():
    """With thinking on every step, any step opens what is kept: nothing is held, and the
    summary stands before the newest steps as before."""
    turn = prepare_turn(None, loop(6, interleaved=True), 2000, COUNTER)
    ids = [m.id for m in turn.messages]
    assert "a0" not in ids and ids[-2:] == ["a5", "t5"], ids
    assert turn.tokens <= 2000


def test_turn_by_turn_every_request_opens_the_loop_with_its_thinking():
    """As a live agent sends it: each request one step longer, the window carried over."""
    msgs = loop(14)
    state = None
    for n in range(8, len(msgs) + 1, 2):  # each request ends with a tool result
        turn = prepare_turn(state, msgs[:n], 800, COUNTER)
        sent, state = turn.messages, turn.state
        ids = [m.id for m in sent]
        assert turn.tokens <= 800, (n, turn.tokens)
        start = turn_start(sent)
        assert sent[start].id == "q" and sent[start + 1].id == "a0", (n, ids)
        assert sent[start + 1].parts == [THOUGHT]
        assert ids[-1] == msgs[n - 1].id, (n, ids)  # the newest result
    assert turn.compacted and "a1" not in ids
