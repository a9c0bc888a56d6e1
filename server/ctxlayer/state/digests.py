"""The cross-session history of a workspace, read from the sessions database: one digest per
earlier session (first user and assistant turns, last substantive reply), oldest first, for
the system prompt's dynamic section. Selection and rendering are the core's.
Must not: be called on the event loop (it reads the database).
"""

from __future__ import annotations

from typing import Any

from ctxlayer.core.prompt.spec import ConversationDigest

#: sessions looked at, newest first (the core keeps at most its own `max_considered` of them)
CONSIDERED = 20


def workspace_digests(store: Any, workspace: str, exclude: str | None = None
                      ) -> list[ConversationDigest]:
    rows = [r for r in store.list(workspace) if r.session_id != exclude][:CONSIDERED]
    digests = []
    for row in reversed(rows):  # oldest first
        messages = [m for _, m, _ in store.messages(row.sid) if m.role in ("user", "assistant")]
        if not messages:
            continue
        first_user = next((m.content for m in messages if m.role == "user"), "")
        first_assistant = next((m.content for m in messages if m.role == "assistant"), "")
        last_reply = next((m.content for m in reversed(messages)
                           if m.role == "assistant" and len(m.content.split()) >= 3), "")
        digests.append(ConversationDigest(title=row.session_id, first_user=first_user,
                                          first_assistant=first_assistant,
                                          last_reply=last_reply, messages=len(messages)))
    return digests
