"""Persistence of sessions: SQLite, one file per user, sessions keyed by workspace.

Owns: reading and writing the database (db.py), its schema (schema.py), where it lives
(paths.py). Must not: hold live state (open sessions, prefix sums, calibration: the session
service in state/session_service.py does), or import the state, a face or the cli.
"""

from ctxlayer.store.db import SessionRow, SessionStore, StoreError, models_in_use
from ctxlayer.store.paths import DB_NAME, state_dir

__all__ = ["DB_NAME", "SessionRow", "SessionStore", "StoreError", "models_in_use", "state_dir"]
