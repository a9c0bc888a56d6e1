"""Persistence of sessions (SQLite, one file per user, sessions keyed by workspace) and the
session service that keeps open sessions in memory and writes every change through.

May import core and tokenizers; never pygls, lsp or cli.
"""

from ctxlayer.store.db import SessionRow, SessionStore, StoreError
from ctxlayer.store.paths import DB_NAME, state_dir

__all__ = ["DB_NAME", "SessionRow", "SessionStore", "StoreError", "state_dir"]
