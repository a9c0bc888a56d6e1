"""The versioned schema of the session database and its migrations.

``PRAGMA user_version`` holds the version; MIGRATIONS[k] takes a database from version k to
k + 1, each in one transaction. Add a migration at the end; never edit a released one.
"""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # 0 -> 1: sessions keyed by workspace, their messages, rules, working items and audit log
    """
    CREATE TABLE sessions (
        sid INTEGER PRIMARY KEY,
        workspace TEXT NOT NULL,
        session_id TEXT NOT NULL,
        model TEXT NOT NULL,
        mode TEXT NOT NULL,
        budget INTEGER,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        closed INTEGER NOT NULL DEFAULT 0,
        next_seq INTEGER NOT NULL DEFAULT 0,
        counter TEXT,
        compaction BLOB,
        calibration BLOB,
        UNIQUE (workspace, session_id)
    );
    CREATE TABLE messages (
        sid INTEGER NOT NULL REFERENCES sessions(sid) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        body BLOB NOT NULL,
        tokens INTEGER NOT NULL,
        PRIMARY KEY (sid, seq)
    ) WITHOUT ROWID;
    CREATE TABLE rules (
        sid INTEGER NOT NULL REFERENCES sessions(sid) ON DELETE CASCADE,
        rule_id TEXT NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (sid, rule_id)
    ) WITHOUT ROWID;
    CREATE TABLE items (
        sid INTEGER NOT NULL REFERENCES sessions(sid) ON DELETE CASCADE,
        item_id TEXT NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (sid, item_id)
    ) WITHOUT ROWID;
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        sid INTEGER NOT NULL REFERENCES sessions(sid) ON DELETE CASCADE,
        at TEXT NOT NULL,
        body BLOB NOT NULL
    );
    CREATE INDEX audit_by_session ON audit (sid, id);
    """,
    # 1 -> 2: list a workspace's sessions by recency without a scan
    """
    CREATE INDEX sessions_by_workspace ON sessions (workspace, updated_at);
    """,
    # 2 -> 3: a provider message kept as it came (its format and native dict, JSON) beside the
    # engine's view in `body`, so thinking, images and unknown parts go back out unchanged.
    # Rows written before stay NULL: they were text only and are sent as before.
    """
    ALTER TABLE messages ADD COLUMN raw BLOB;
    """,
    # 3 -> 4: the window of a live conversation (summary chunks, outlines, restored ids), so
    # the first request after a restart sends the same prefix as before it
    """
    CREATE TABLE conversations (
        workspace TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        model TEXT NOT NULL,
        turn INTEGER NOT NULL,
        body BLOB NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (workspace, conversation_id)
    ) WITHOUT ROWID;
    """,
    # 4 -> 5: the audit entries older than `[session] keep_days` found without a scan (most
    # days there are none: state/expiry.py asks once a day)
    """
    CREATE INDEX audit_by_time ON audit (at);
    """,
    # 5 -> 6: the windows older than `keep_days` found without reading every window: a row's
    # time comes after its body, so the scan read each body's pages (25 ms for 150 windows in
    # the page cache, under the store's lock that the day's first request waits for)
    """
    CREATE INDEX conversations_by_time ON conversations (workspace, updated_at);
    """,
    # 6 -> 7: a family a client opened anew (its own compaction, aider's repo map), moved to
    # the family of the chat it went on in (state/conversations.py `_unhinted_family`): after
    # a restart its next request finds that chat's window, not none
    """
    CREATE TABLE moved_families (
        workspace TEXT NOT NULL,
        family TEXT NOT NULL,
        target TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (workspace, family)
    ) WITHOUT ROWID;
    """,
    # 7 -> 8: a count of the changes to what a session assembles from (its messages, rules,
    # working items, mode, budget, window), so a daemon sees at its next request that another
    # daemon on the state folder changed the session, with one read
    """
    ALTER TABLE sessions ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
    """,
    # 8 -> 9: the system prompt params a session was last assembled with (ctx/assemble's
    # `systemPrompt`), used again when a request gives none: kept only in memory, they were
    # lost at a restart and the session went on with a bare system prompt
    """
    ALTER TABLE sessions ADD COLUMN system_spec BLOB;
    """,
    # 9 -> 10: the conversation each answer a provider named was of (a Responses request goes
    # on in it by `previous_response_id`): kept only in memory, a chain's first request after a
    # restart started a conversation of its own, uncalibrated, its window not found
    """
    CREATE TABLE answers (
        workspace TEXT NOT NULL,
        answer_id TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (workspace, answer_id)
    ) WITHOUT ROWID;
    CREATE INDEX answers_by_time ON answers (workspace, updated_at);
    """,
    # 10 -> 11: the fingerprint of a session's last assembly ((key, tokens) per message), which
    # `cacheReuseTokens` compares the next one with: kept only in memory, the first assembly
    # after a restart said 0 tokens reused of a prompt identical to the last one
    """
    ALTER TABLE sessions ADD COLUMN fingerprint BLOB;
    """,
    # 11 -> 12: what a live chat's last turn sent when it did not move its window, as the
    # change from the window kept (core/prepare/persist.py `Sent`): the window is written only
    # when it moves, and the first request after a restart took the older turn's result for
    # the last one sent (its cache reuse said too small). A row of its own, small: a turn
    # writes it without writing the window's row again
    """
    CREATE TABLE sent (
        workspace TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        turn INTEGER NOT NULL,
        body BLOB NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (workspace, conversation_id)
    ) WITHOUT ROWID;
    CREATE INDEX sent_by_time ON sent (workspace, updated_at);
    """,
    # 12 -> 13: whether a kept conversation is listed (ctx/conversations): a request the
    # client asked beside its chat (a title) is set aside after its own window was written,
    # and kept only in memory, after a restart it was listed as a chat of its own. Set with
    # each window, and on its own when a conversation is set aside or goes on again
    """
    ALTER TABLE conversations ADD COLUMN listed INTEGER NOT NULL DEFAULT 1;
    """,
]

VERSION = len(MIGRATIONS)
