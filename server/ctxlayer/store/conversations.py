"""The live conversations' rows (ctx/prepare, the gateway): each chat's window kept across a
restart (core/prepare/persist.py's bytes) and whether ctx/conversations lists it, what its
last turn sent beside it, the families whose requests went on in another, and which chat a
provider's answer was of. A mixin of `db.SessionStore`, which owns the connection and its
transactions (``_tx``). A write of an older turn than the one kept is ignored (two writes may
finish out of order); the recent windows are read by the time index, a family's by a range of
the table's key, never a scan.
Must not: decode a window (the state does, through core/prepare/persist.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

#: kept windows of one family read when its first request after a restart looks for its own
#: (a chat, its sub-agents' and forks', most recent first)
FAMILY_MOST = 8


class ConversationRows:
    """The reads and writes of the live conversations' tables (`db.SessionStore` gives the
    connection)."""


    def put_conversation(self, workspace: str, conversation_id: str, model: str, turn: int,
                         body: bytes, now: str, listed: bool = True) -> None:
        """Keep a conversation's window (core/prepare/persist.py's bytes), ``listed`` or not
        by ctx/conversations; a write of an older turn than the one kept is ignored (two
        writes may finish out of order)."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO conversations (workspace, conversation_id, model, turn, body, "
                "updated_at, listed) VALUES (?,?,?,?,?,?,?) ON CONFLICT (workspace, "
                "conversation_id) DO UPDATE SET model=excluded.model, turn=excluded.turn, "
                "body=excluded.body, updated_at=excluded.updated_at, listed=excluded.listed "
                "WHERE excluded.turn > conversations.turn",
                (workspace, conversation_id, model, turn, body, now, int(listed)))

    def set_listed(self, workspace: str, conversation_id: str, listed: bool) -> None:
        """List a kept conversation again, or no longer (a request set aside as asked beside
        a chat after its window was written); nothing when none is kept under that id."""
        with self._tx() as c:
            c.execute("UPDATE conversations SET listed=? WHERE workspace=? AND "
                      "conversation_id=?", (int(listed), workspace, conversation_id))

    def conversation(self, workspace: str, conversation_id: str) -> tuple[str, int, bytes] | None:
        """(model, turn, body) of a kept conversation, None when there is none."""
        with self._tx() as c:
            row = c.execute("SELECT model, turn, body FROM conversations WHERE workspace=? AND "
                            "conversation_id=?", (workspace, conversation_id)).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def put_sent(self, workspace: str, conversation_id: str, turn: int, body: bytes,
                 now: str) -> None:
        """Keep what a conversation's last turn sent beside the window of ``turn`` (persist.py's
        `Sent` bytes); a write for an older window than the one kept is ignored."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO sent (workspace, conversation_id, turn, body, updated_at) VALUES "
                "(?,?,?,?,?) ON CONFLICT (workspace, conversation_id) DO UPDATE SET "
                "turn=excluded.turn, body=excluded.body, updated_at=excluded.updated_at "
                "WHERE excluded.turn >= sent.turn",
                (workspace, conversation_id, turn, body, now))

    def sent_of(self, workspace: str, conversation_ids: Collection[str]
                ) -> dict[str, tuple[int, bytes]]:
        """(window turn, body) of what the last turns of ``conversation_ids`` sent, of those
        that keep one."""
        names = list(conversation_ids)
        if not names:
            return {}
        with self._tx() as c:
            rows = c.execute("SELECT conversation_id, turn, body FROM sent WHERE workspace=? "
                             f"AND conversation_id IN ({','.join('?' * len(names))})",
                             (workspace, *names)).fetchall()
        return {r[0]: (r[1], r[2]) for r in rows}

    def recent_conversations(self, workspace: str, most: int) -> list[tuple[str, bytes]]:
        """(conversation id, body) of the workspace's kept conversations that are listed, the
        most recently kept first, at most ``most`` (the time index, not a scan)."""
        with self._tx() as c:
            rows = c.execute("SELECT conversation_id, body FROM conversations INDEXED BY "
                             "conversations_by_time WHERE workspace=? AND listed ORDER BY "
                             "updated_at DESC LIMIT ?", (workspace, most)).fetchall()
        return [(r[0], r[1]) for r in rows]

    def recent_windows(self, workspace: str, but: Collection[str] = (),
                       most: int = FAMILY_MOST) -> list[tuple[str, str, int, bytes, bool]]:
        """(conversation id, model, turn, body, whether it is listed) of the workspace's kept
        conversations but those in ``but``, the most recently kept first, at most ``most``
        (the time index)."""
        names = list(but)
        with self._tx() as c:
            rows = c.execute("SELECT conversation_id, model, turn, body, listed FROM "
                             "conversations "
                             "INDEXED BY conversations_by_time WHERE workspace=? AND "
                             f"conversation_id NOT IN ({','.join('?' * len(names))}) "
                             "ORDER BY updated_at DESC LIMIT ?",
                             (workspace, *names, most)).fetchall()
        return [(r[0], r[1], r[2], r[3], bool(r[4])) for r in rows]

    def count_conversations(self, workspace: str, besides: Collection[str]) -> int:
        """How many listed conversations the workspace keeps, not counting those in
        ``besides``."""
        names = list(besides)
        with self._tx() as c:
            row = c.execute("SELECT COUNT(*) FROM conversations WHERE workspace=? AND listed "
                            f"AND conversation_id NOT IN ({','.join('?' * len(names))})",
                            (workspace, *names)).fetchone()
        return row[0]

    def family_conversations(self, workspace: str, family: str, alike: Callable[[str], bool],
                             but: Collection[str] = (), most: int = FAMILY_MOST
                             ) -> list[tuple[str, int, bytes]]:
        """(conversation id, turn, body) of the kept conversations of a family on a model
        ``alike`` holds for (counted alike with the chat's: the chat goes on across them):
        the family's id and its forks' (``<family>-<run><n>``), but those in ``but`` (the
        chats in memory: left out before the bound, which counted them, so a family of ten
        chats coming back read fewer windows at each), the most recently kept first, at most
        ``most``. A range of the table's key, not a scan."""
        names = list(but)
        with self._tx() as c:
            c.create_function("alike", 1, alike, deterministic=True)  # before the bound
            rows = c.execute(
                "SELECT conversation_id, turn, body FROM conversations WHERE workspace=? AND "
                "conversation_id >= ? AND conversation_id < ? AND alike(model) AND (conversation_id=? "
                "OR substr(conversation_id, 1, ?)=?) AND conversation_id NOT IN "
                f"({','.join('?' * len(names))}) ORDER BY updated_at DESC LIMIT ?",
                (workspace, family, family + ".", family, len(family) + 1, family + "-",
                 *names, most)).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def put_moved(self, workspace: str, family: str, target: str, now: str) -> None:
        """Keep that requests of ``family`` go on in the family ``target``."""
        with self._tx() as c:
            c.execute("INSERT INTO moved_families (workspace, family, target, updated_at) "
                      "VALUES (?,?,?,?) ON CONFLICT (workspace, family) DO UPDATE SET "
                      "target=excluded.target, updated_at=excluded.updated_at",
                      (workspace, family, target, now))

    def moved(self, workspace: str, family: str) -> str | None:
        """The family requests of ``family`` go on in, None when it was not moved."""
        with self._tx() as c:
            row = c.execute("SELECT target FROM moved_families WHERE workspace=? AND family=?",
                            (workspace, family)).fetchone()
        return row[0] if row else None

    def put_answer(self, workspace: str, answer_id: str, conversation_id: str,
                   now: str) -> None:
        """Keep that the provider's answer ``answer_id`` was of ``conversation_id``."""
        with self._tx() as c:
            c.execute("INSERT INTO answers (workspace, answer_id, conversation_id, updated_at) "
                      "VALUES (?,?,?,?) ON CONFLICT (workspace, answer_id) DO UPDATE SET "
                      "conversation_id=excluded.conversation_id, updated_at=excluded.updated_at",
                      (workspace, answer_id, conversation_id, now))

    def answered(self, workspace: str, answer_id: str) -> str | None:
        """The conversation the provider's answer ``answer_id`` was of, None when unknown."""
        with self._tx() as c:
            row = c.execute("SELECT conversation_id FROM answers WHERE workspace=? AND "
                            "answer_id=?", (workspace, answer_id)).fetchone()
        return row[0] if row else None
