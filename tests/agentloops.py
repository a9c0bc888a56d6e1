"""Shared by the test suites: an agent's tool loop as the engine reads it, a Bash call reading a
build log and its 60-line output per round."""

from __future__ import annotations

from ctxlayer.protocol import Message, ToolCall


def bash_loop(q: int, rounds: int) -> list[Message]:
    """``rounds`` calls and outputs of the work on question ``q``, ids unique per question."""
    out = []
    for k in range(rounds):
        out += [Message(role="assistant", id=f"a{q}_{k}", content="", tool_calls=[
                    ToolCall(id=f"c{q}_{k}", name="Bash",
                             arguments=f'{{"command": "cat build.log; echo run {q} pass {k}"}}')]),
                Message(role="tool", id=f"o{q}_{k}", tool_call_id=f"c{q}_{k}", content="\n".join(
                    f"line {j}: step {j} of the build passed, run {q} pass {k}"
                    for j in range(60)))]
    return out
