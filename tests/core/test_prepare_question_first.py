"""The question an agent was given stays ahead of the summaries of the work done on it: a
Codex run (its developer messages, its `<environment_context>` as a user turn of its own, the
task, then a long shell loop) in a small budget, turn by turn. The environment is the client's
context, not the task: no summary quotes it as what was asked."""

from __future__ import annotations

from ctxlayer.core.assembly.summary import offline_summary
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.prepare.summaries import injected
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message, ToolCall

WORDS = WordTokenizer()
TASK = "Check the build log, many times."
ENVIRONMENT = ("<environment_context>\n  <cwd>/repo</cwd>\n  <shell>bash</shell>\n"
               "</environment_context>")


def codex_run(rounds: int) -> list[Message]:
    out = [Message(role="system", id="dev0", content="You are a coding agent. " * 40),
           Message(role="system", id="dev1", content="<permissions>full</permissions>"),
           Message(role="user", id="env", content=ENVIRONMENT),
           Message(role="user", id="task", content=TASK)]
    for k in range(rounds):
        out += [Message(role="assistant", id=f"call{k}", content="", tool_calls=[
                    ToolCall(id=f"c{k}", name="exec_command",
                             arguments=f'{{"cmd": "cat build.log; echo pass {k}"}}')]),
                Message(role="tool", id=f"out{k}", tool_call_id=f"c{k}", content="\n".join(
                    f"line {j}: step {j} of the build passed, pass {k}" for j in range(40)))]
    return out


def test_the_task_stays_ahead_of_every_summary_of_the_work_on_it_and_never_moves():
    """Before, the first chunk took the environment with the first passes; the task, kept
    whole, came after the chunks: after two summaries of twelve of its own tool calls (a
    real Codex run through the gateway, 16 rounds in a 40k window)."""
    state, previous, steps = None, None, 0
    for rounds in range(1, 17):
        turn = prepare_turn(state, codex_run(rounds), 1500, WORDS)
        ids = [m.id for m in turn.messages]
        summaries = [k for k, m in enumerate(turn.messages) if m.kind == "summary"]
        assert "task" in ids
        assert all(ids.index("task") < k for k in summaries), ids
        for m in turn.messages:
            if m.kind == "summary":
                assert "environment_context" not in m.content.split("Actions")[0], m.content
        if previous is not None and "task" in previous:
            # a step appends its chunk: the task keeps its place
            assert ids.index("task") == previous.index("task"), (previous, ids)
        steps += turn.stepped and bool(summaries)
        state, previous = turn.state, ids
    assert steps >= 2


def test_a_codex_environment_is_not_what_a_summary_says_was_asked():
    """When a summary does take the environment (a newer question came), its "Asked" is the
    user's words: it quoted `<environment_context> <cwd>...` as the request."""
    env = Message(role="user", id="env", content=ENVIRONMENT)
    task = Message(role="user", id="task", content=TASK)
    text = offline_summary([env, task], "", 2000)
    assert TASK in text and "environment_context" not in text and "/repo" not in text
    assert injected([env, task], [2, 3])[0] == {0}
