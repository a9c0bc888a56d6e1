"""How aider's attached files are recognized: its read-only files (`--read`), its repo map and
the files its user added to the chat, each one user message of its own opening with a fixed
sentence, its short acknowledgement after it. Pure; no Window (window.py and attached.py both
ask it).
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxlayer.core.groups import is_result
from ctxlayer.protocol import Message

#: how aider opens these messages (its `files_content_prefix` of each edit format and of its
#: ask mode, `read_only_files_prefix`, `repo_content_prefix` of each, and the chat files' message
#: when none was added: `files_no_full_files`, `files_no_full_files_with_repo_map`)
OPENINGS = ("I have *added these files to the chat*", "Here are some READ ONLY files",
            "Here are summaries of some files present in my git repository",
            "I am working with you on code in a git repository.\nHere are summaries of some "
            "files",  # its ask and architect modes' repo map
            "I am not sharing any files that you can edit yet.",
            "Don't try and edit any existing code without asking me to add the files")
#: an acknowledgement is aider's "Ok." or "Ok, any changes I propose will be to those files.":
#: a long reply after a message that only opens alike is the model's answer, not one (kept
#: whole as one, a 900-word answer to a user who pasted aider's words was dropped by the fit)
ACK_MAX_CHARS = 200


def is_attached(m: Message) -> bool:
    """Whether ``m`` is a client's message of attached files (`OPENINGS`)."""
    return m.role == "user" and m.kind is None and not is_result(m) \
        and m.content.startswith(OPENINGS)


def attached(msgs: Sequence[Message]) -> frozenset[int]:
    """The indices of the attached files' messages, each with the acknowledgement after it (an
    assistant's words without calls): kept together, the exchange reads as aider wrote it."""
    out: set[int] = set()
    for i, m in enumerate(msgs):
        if is_attached(m):
            out.add(i)
            if i + 1 < len(msgs) and is_ack(msgs[i + 1]):
                out.add(i + 1)
    return frozenset(out)


def is_ack(m: Message) -> bool:
    """Whether ``m`` reads as aider's acknowledgement of its files (short words, no calls)."""
    return m.role == "assistant" and not m.tool_calls and len(m.content) <= ACK_MAX_CHARS
