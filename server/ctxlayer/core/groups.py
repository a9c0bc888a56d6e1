"""A tool call and its results, the one structure trim, assembly, restore and prepare share:
they live and die together, so every engine keeps or drops them as one group.

Owns `ToolGroups`: the groups of a message list, matched by call id, never by position. A
message with tool calls leads its group; each result joins the group of the call it answers; a
result whose call is not in the list is an orphan (a group of its own, listed in `orphans`:
trim drops it, the others never show it without its call).
Pure: no counting, nothing but the messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxlayer.protocol import Message

__all__ = ["ToolGroups", "is_output", "is_result", "lead_of"]


def is_output(m: Message) -> bool:
    """A tool's output, outlined when long: a `tool` message, or one marked `toolOutput` (a
    client's own, or a file a user attached as a document)."""
    return m.role == "tool" or m.kind == "toolOutput"


def is_result(m: Message) -> bool:
    """A tool result (OpenAI's `tool` role, or any message answering a call id)."""
    return m.role == "tool" or m.tool_call_id is not None


def lead_of(messages: Sequence[Message], i: int) -> int:
    """The message that leads message i's group (i itself unless it is a result whose call
    comes before it), found by call id from i back, without making every group."""
    m = messages[i]
    if m.tool_calls or not is_result(m) or m.tool_call_id is None:
        return i
    for k in range(i - 1, -1, -1):
        if any(c.id == m.tool_call_id for c in messages[k].tool_calls or ()):
            return k
    return i  # an orphan leads itself


class ToolGroups:
    __slots__ = ("lead", "members", "orphans", "owner")

    def __init__(self, messages: Sequence[Message], since: ToolGroups | None = None) -> None:
        """``since``: the groups of the first messages of ``messages`` (a list grown at its
        end since they were made, as a chat's turn is): only the messages after them are read.
        A result can only join the group of a call before it, so theirs stay as they were."""
        start = len(since.lead) if since is not None else 0
        #: each call id's message, the lead of its group
        owner: dict[str, int] = dict(since.owner) if since is not None else {}
        #: each message's group, by the index of the message that leads it
        self.lead: list[int] = [*since.lead, *range(start, len(messages))] if since is not None \
            else list(range(len(messages)))
        #: a group with results: its lead and its results, in order (others are just [i]);
        #: a list is never changed once made (a later turn's groups share them)
        members: dict[int, list[int]] = dict(since.members) if since is not None else {}
        self.orphans: list[int] = list(since.orphans) if since is not None else []
        for i in range(start, len(messages)):
            m = messages[i]
            if m.tool_calls:
                for call in m.tool_calls:
                    owner[call.id] = i
            elif is_result(m):
                g = owner.get(m.tool_call_id) if m.tool_call_id is not None else None
                if g is None:
                    self.orphans.append(i)
                    continue
                self.lead[i] = g
                members[g] = [*members.get(g, (g,)), i]
        self.members, self.owner = members, owner

    def of(self, i: int) -> list[int]:
        """The indices of message i's group, in order."""
        return self.members.get(self.lead[i], [i])

    def end(self, j: int) -> int:
        """The end (exclusive) of the group led by j, as a range of the list: its last
        member plus one (a result the list holds further on widens the range to it)."""
        members = self.members.get(self.lead[j])
        return (members[-1] if members else j) + 1

    def in_order(self) -> list[list[int]]:
        """Every group, in the order of the messages that lead them (an orphan alone)."""
        return [self.of(i) for i in range(len(self.lead)) if self.lead[i] == i]
