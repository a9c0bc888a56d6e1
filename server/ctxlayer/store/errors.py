"""The store's errors: what a caller is told when the database cannot serve it, each naming
what failed in words a user can act on (`describe_store_error` for SQLite's own).
Must not: open, read or write the database.
"""

from __future__ import annotations


class StoreError(Exception):
    """The database cannot be used (e.g. written by a newer ctxlayer)."""


class UnreadableRow(StoreError):
    """A row of a session does not read (a byte changed on disk, which SQLite's checks pass,
    or a form another version of ctxlayer wrote): named, never a traceback."""


class FolderGone(StoreError):
    """The database file this process opened is no longer at its path (the state folder was
    deleted or moved, or another file put there): a write into it would be lost."""


class SeqTaken(StoreError):
    """Another process (a second daemon on the state folder) appended to the session since it
    was read: the rows' positions are taken, nothing was written."""


class IdTaken(SeqTaken):
    """Another process gave a new rule or working item the id this one named from what it had
    read (`rule-N`, `item-N`): nothing was written."""


def describe_store_error(exc: Exception) -> str:
    """What failed, in words a user can act on."""
    text = str(exc)
    if isinstance(exc, StoreError):  # said so where it was raised: once is enough
        return text
    low = text.lower()
    if "locked" in low or "busy" in low:
        return f"the database is locked by another process ({text}); try again"
    if "full" in low:
        return f"the disk is full ({text}); free some space"
    if "readonly" in low or "read-only" in low:
        return f"the database cannot be written ({text}); check the state folder's permissions"
    if "malformed" in low or "not a database" in low:
        return (f"the database file is damaged ({text}); restart the daemon to move it aside "
                "and start a fresh one")
    return text
