"""The cross-session history section: which earlier conversations, and how each reads.

Owns the selection rule and the rendering. Input digests are oldest first; so is the output.
The rule (gptme's): look at the last `max_considered` (20) conversations, drop the short ones
(fewer than `min_messages`, 4), keep the last `keep` (5). Each kept conversation shows its
first user and assistant turns and its last substantive reply, each cut to a few hundred
characters, with the count of messages in between. Reading conversations from disk is the
caller's job.
"""

from __future__ import annotations

from ctxlayer.core.errors import ContextError

from . import texts
from .spec import ConversationDigest
from .tools import cut_at_word

TURN_CHARS = 300


def select_history(
    digests: list[ConversationDigest],
    keep: int = 5,
    max_considered: int = 20,
    min_messages: int = 4,
) -> list[ConversationDigest]:
    """The digests the history section keeps, oldest first."""
    for field, value in (("keep", keep), ("maxConsidered", max_considered),
                         ("minMessages", min_messages)):
        if value < 0:
            raise ContextError("invalid", f"{field} must not be negative, not {value}",
                               field=field)
    considered = digests[-max_considered:] if max_considered else []
    substantive = [d for d in considered if d.messages >= min_messages]
    return substantive[-keep:] if keep else []


def _flat(text: str) -> str:
    return cut_at_word(" ".join(text.split()), TURN_CHARS)


def render_digest(digest: ConversationDigest) -> str:
    """One conversation: first exchange, omitted middle, last substantive reply."""
    lines = [f"## {' '.join(digest.title.split()) or '(untitled)'}"]
    if digest.first_user.strip():
        lines.append(f"User: {_flat(digest.first_user)}")
    if digest.first_assistant.strip():
        lines.append(f"Assistant: {_flat(digest.first_assistant)}")
    last = digest.last_reply.strip()
    if last and " ".join(last.split()) != " ".join(digest.first_assistant.split()):
        between = digest.messages - 3
        if between > 0:
            lines.append(f"... ({between} messages omitted) ...")
        lines.append(f"Last reply: {_flat(last)}")
    return "\n".join(lines)


def history_section(
    digests: list[ConversationDigest], history_text: str | None, compact: bool
) -> str:
    """The history section, or "" when there is nothing to show.

    `history_text` is a summary the caller rendered itself (the wire's `dynamic.history`);
    it is framed with the same heading.
    """
    if digests and history_text is not None:
        raise ContextError("invalid", "give history either as digests or as text, not both",
                           field="history")
    if history_text is not None:
        body = history_text.strip()
    else:
        body = "\n\n".join(render_digest(d) for d in select_history(digests))
    if not body:
        return ""
    return f"{texts.HISTORY.pick(compact)}\n\n{body}"
