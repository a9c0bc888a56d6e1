"""Which Anthropic thinking blocks the provider reads again, and so what they cost.

A thinking block sent back carries the whole thinking sealed in its `signature` (with
`display: "omitted"` its text is empty; a summary is shorter than what was thought). Whether
the provider reads it again depends on the request and the model: `context_management`'s
`clear_thinking_*` edit says how many turns keep their thinking (`keep: "all"`, Claude Code's,
or a number of turns); without one, Claude Opus 4.5 and later, Sonnet 4.6 and later, every
Fable (and names this table does not know) keep every turn's thinking, the models before them
only the last turn's: the turn under way, the assistant messages after the last user message
that is not all tool results (an agent's whole tool loop). A block the provider reads costs its
sealed size; one it drops costs its text, since a block costed whole long after the provider
stopped reading it would take the room of history the provider does read.

Owns the model names' reading (`claude_version`) too, which the windows table shares.
"""

from __future__ import annotations

import re

# claude-<family>-<major>[-<minor>] (OpenRouter writes `claude-opus-4.5`); a part of 8 digits
# is a date, not a minor version
_NAME = re.compile(r"claude-(opus|sonnet|haiku|fable)-(\d+)(?:[-.](\d{1,2}))?(?!\d)")

# the names before Claude 4: claude-<major>[-<minor>]-<family>
_LEGACY = re.compile(r"claude-\d(?:[-.]\d)?-(?:opus|sonnet|haiku)")

#: (family, the first (major, minor) that keeps every turn's thinking by default)
KEEPS_EVERY_TURN: tuple[tuple[str, tuple[int, int]], ...] = (
    ("opus", (4, 5)),
    ("sonnet", (4, 6)),
    ("haiku", (5, 0)),
    ("fable", (0, 0)),
)


def claude_version(model: str) -> tuple[str, tuple[int, int]] | None:
    """(family, (major, minor)) of a Claude model name, or None for another name."""
    found = _NAME.search(model.lower())
    if found is None:
        return None
    return found.group(1), (int(found.group(2)), int(found.group(3) or 0))


def from_version(version: tuple[str, tuple[int, int]] | None,
                 table: tuple[tuple[str, tuple[int, int]], ...]) -> bool:
    """Whether a Claude model's (family, (major, minor)) is, in ``table``, one of a family's
    from its first (major, minor) on (what keeps every turn's thinking, which window is 1M)."""
    return version is not None and any(
        version[0] == family and version[1] >= since for family, since in table)


def every_turn_read(payload: dict) -> bool:
    """Whether the provider reads the thinking of every earlier turn of this request."""
    management = payload.get("context_management")
    edits = management.get("edits") if isinstance(management, dict) else None
    for edit in edits if isinstance(edits, list) else ():
        if isinstance(edit, dict) and str(edit.get("type", "")).startswith("clear_thinking"):
            return edit.get("keep") == "all"  # else a number of turns (one by default)
    model = payload.get("model")
    if not isinstance(model, str):
        return True
    if _LEGACY.search(model.lower()):  # claude-3-7-sonnet and its elders: the last turn's
        return False
    version = claude_version(model)
    return version is None or from_version(version, KEEPS_EVERY_TURN)


def last_turn_start(messages: list) -> int:
    """The index of the last user message that is not all tool results (-1: none): the
    thinking of the assistant messages after it is the turn's, read again."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "user":
            content = m.get("content")
            if not (isinstance(content, list) and content and all(
                    isinstance(b, dict) and b.get("type") == "tool_result" for b in content)):
                return i
    return -1
