"""Where the session database lives: `DB_NAME` in the state folder.

The state folder itself is decided in one place, `ctxlayer.paths.state_dir` (re-exported here
for the store's callers).
"""

from __future__ import annotations

from ctxlayer.paths import state_dir

DB_NAME = "sessions.sqlite3"

__all__ = ["DB_NAME", "state_dir"]
