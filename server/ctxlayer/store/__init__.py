"""Persistence of sessions: SQLite, one file per user, sessions keyed by workspace.

Owns: the database file and its connection (db.py), the rows it reads and writes: the
sessions' (sessions.py) and the live conversations' (conversations.py), its errors
(errors.py), its schema (schema.py), where it lives (paths.py) and the note a clean close
leaves (closed.py). Must not: hold live state (open sessions, prefix sums, calibration: the
session service in state/session_service.py does), or import the state, a face or the cli.
"""

from ctxlayer.store.db import SessionStore, models_in_use
from ctxlayer.store.errors import StoreError
from ctxlayer.store.paths import DB_NAME, state_dir
from ctxlayer.store.sessions import SessionRow

__all__ = ["DB_NAME", "SessionRow", "SessionStore", "StoreError", "models_in_use", "state_dir"]
