"""The first step of the newest turn's tool loop, which carries the turn's thinking.

With thinking on, Anthropic reads an agent's whole tool loop (the assistant messages after the
last user message that is not all tool results) as one assistant turn whose thinking stands
at its start, in its first assistant message (core/formats/anthropic_thinking.py
`last_turn_start`); without interleaved thinking the later steps carry none. A window that
keeps later steps of the loop but not the first one (summarized, or dropped as an older turn)
sends a turn that opens with a tool_use, which the provider refuses ("a final `assistant`
message must start with a thinking block"). So that step is held: shown whenever a later step
of its turn is, with the results of its calls (outlined as the room requires), the steps
between giving way (summarized, outlined, dropped).

Must not: decide what else the window keeps (tail.py fits it, the held step counted as kept
whole). Pure: reads the messages only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ctxlayer.core.groups import is_result
from ctxlayer.protocol import Message

#: the labels a thinking block's part carries (core/formats/media.py `label`)
_THINKING = ("thinking (", "redacted thinking (")


def has_thinking(m: Message) -> bool:
    """Whether the message carries a thinking block (its parts say so)."""
    return any(p.startswith(_THINKING) for p in m.parts or ())


def opening_step(messages: Sequence[Message]) -> int | None:
    """The index of the first assistant message after the newest user message that is not a
    tool result, when it opens a tool loop (it calls tools) with thinking and a later step of
    the loop has none; else None. With interleaved thinking every step carries its own, so
    whichever step a window keeps first opens the turn with thinking: nothing to hold."""
    question = next((i for i in range(len(messages) - 1, -1, -1)
                     if messages[i].role == "user" and not is_result(messages[i])), -1)
    steps = [i for i in range(question + 1, len(messages)) if messages[i].role == "assistant"]
    if not steps or not messages[steps[0]].tool_calls or not has_thinking(messages[steps[0]]):
        return None
    if all(has_thinking(messages[i]) for i in steps[1:]):
        return None  # interleaved thinking, or no later step: any first step kept will do
    return steps[0]


def brought_back(messages: Sequence[Message], start: int, shown: Collection[int]) -> list[int]:
    """The positions before ``start`` (where the verbatim tail starts) to show at the head of
    the tail: the loop's first step and the results of its calls, when a summary replaced it
    and the tail holds later steps of its turn; none when it is shown already (``shown``:
    kept whole or restored beside the summary)."""
    first = opening_step(messages)
    if first is None or first >= start or start >= len(messages) or first in shown:
        return []
    ids = {c.id for c in messages[first].tool_calls or ()}
    return [first, *(i for i in range(first + 1, start)
                     if is_result(messages[i]) and messages[i].tool_call_id in ids
                     and i not in shown)]
