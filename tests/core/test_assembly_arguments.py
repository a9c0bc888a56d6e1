"""A session outlines a call long by its arguments (an agent that wrote a file through a call)
in its window, as ctx/prepare and the trim engine do, instead of summarizing it and every turn
before it: a 9,600-token write in a budget of 8,000 sent 1,758 tokens, 3 messages."""

from __future__ import annotations

import json

from test_assembly import COUNTER, build, check_fits, history_part, inp
from test_prepare_arguments import write_arguments

from ctxlayer.core.assembly import Compaction, assemble, measure
from ctxlayer.protocol import Message, ToolCall


def writing_session() -> list[Message]:
    out = []
    for k in range(6):
        out += [Message(role="user", id=f"q{k}", content=f"question {k}"),
                Message(role="assistant", id=f"a{k}", content=f"answer {k} " + "explained. " * 30)]
    out += [Message(role="user", id="ask", content="Write the steps module."),
            Message(role="assistant", id="write", content="Writing it.", tool_calls=[
                ToolCall(id="call_w", name="str_replace_editor", arguments=write_arguments())]),
            Message(role="tool", id="written", tool_call_id="call_w", content="File created."),
            Message(role="user", id="run", content="Now run the tests.")]
    return out


def test_a_call_long_by_its_arguments_is_outlined_in_the_window_not_summarized():
    msgs = writing_session()
    history = build(msgs)
    budget = 900
    assert COUNTER.count(msgs[13].tool_calls[0].arguments) > budget
    out = assemble(history, Compaction(), inp(budget), COUNTER)
    check_fits(out, budget)
    assert not out.result.compacted
    sent = history_part(out)
    assert [m.id for m in sent] == [m.id for m in msgs]  # every turn kept, none summarized
    assert out.result.tokens.total >= 0.8 * budget  # the outline takes the room there is
    value = json.loads(sent[13].tool_calls[0].arguments)  # still a JSON object
    assert value["path"] == "src/pipeline/steps.py" and value["command"] == "create"
    assert value["file_text"].startswith("def step_0(queue):")
    entry, = [e for e in out.result.truncated if e.message_id == "write"]
    assert "arguments outlined" in entry.reason
    # the measure counts the history as the window sends it: within the budget, no compaction
    budget_now = measure(history, Compaction(), inp(budget), COUNTER, model="m",
                         session_id="s", error_band=None)
    assert budget_now.used <= budget
    # assembled again, the unchanged session sends the same
    again = assemble(history, out.compaction or Compaction(), inp(budget), COUNTER)
    assert again.result.messages == out.result.messages
