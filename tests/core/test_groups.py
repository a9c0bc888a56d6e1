"""Tool groups made again for a list grown at its end, from the groups of its first messages,
are the groups made from the whole list."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlayer.core.groups import ToolGroups
from ctxlayer.protocol import Message, ToolCall

IDS = ["a", "b", "c", "d"]


@st.composite
def messages(draw) -> list[Message]:
    out: list[Message] = []
    for k in range(draw(st.integers(0, 14))):
        shape = draw(st.sampled_from(["user", "call", "result", "orphan"]))
        if shape == "call":
            ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True))
            out.append(Message(role="assistant", id=f"m{k}", content="",
                               tool_calls=[ToolCall(id=i, name="sh", arguments="{}") for i in ids]))
        elif shape in ("result", "orphan"):
            out.append(Message(role="tool", id=f"m{k}", content="out",
                               tool_call_id=draw(st.sampled_from(IDS)) if shape == "result"
                               else "nobody"))
        else:
            out.append(Message(role="user", id=f"m{k}", content="q"))
    return out


def _as_tuple(g: ToolGroups):
    return g.lead, g.members, g.orphans, g.owner


@settings(max_examples=500, deadline=None)
@given(msgs=messages(), data=st.data())
def test_groups_grown_from_a_prefix_are_the_groups_of_the_whole(msgs, data):
    k = data.draw(st.integers(0, len(msgs)))
    before = ToolGroups(msgs[:k])
    kept = _as_tuple(ToolGroups(msgs[:k]))
    assert _as_tuple(ToolGroups(msgs, since=before)) == _as_tuple(ToolGroups(msgs))
    assert _as_tuple(before) == kept, "the groups it grew from are not changed"
