"""SQLite persistence of sessions: the database file and its one connection (opening, the
schema's migrations, a damaged file moved aside, transactions, a clean close), and forgetting
what is old across the tables. What the rows hold is read and written by the mixins
`SessionStore` is made of: the sessions' (sessions.py: messages, rules, working items, state,
audit log) and the live conversations' (conversations.py: kept windows and their listing).

One database file per user (paths.py), sessions keyed by (workspace, session id). WAL journal.

Durability: an append is acknowledged only after its transaction commits. In WAL mode a
commit has written the transaction to the WAL file, so ``kill -9`` of the daemon cannot lose
it (the OS holds the pages); ``synchronous=NORMAL`` leaves out only the fsync that protects
against a power cut or OS crash, where the last commits may be lost but the database stays
consistent. Measured here (bench/session_bench.py, one 2.4 kB message per transaction):
NORMAL 0.03 ms p50, FULL 0.6 ms p50 and 4 ms p90. The default is "normal", because the
requirement is surviving a killed daemon; ``durability="full"`` (``[session] durability`` in
ctxlayer.toml) fsyncs every commit for power-loss safety.

A database that SQLite cannot read (not a database, malformed, failed quick_check, which is
left out only when the file is as the last clean close left it: store/closed.py) is moved
aside as ``sessions.sqlite3.corrupt-<n>`` (with its -wal and -shm) with one warning naming both
paths, and a fresh one is created; no other file is touched. A file SQLite finds damaged while
the daemon runs is noted so (store/closed.py): the next open checks it whole and moves it
aside. Any other failure to open it (busy beyond BUSY_TIMEOUT_MS, a full disk, a read-only
folder) is a StoreError and the file stays: several daemons share the state folder (an editor
window each), and opening a new one together, or while another writes, is their usual start.
Thread safety: one connection guarded by a lock; every public method is one transaction.
Must not: know about the wire or pygls; decide policy (the service does).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from ctxlayer.statefiles import make_private_dir, make_private_file, unusable_folder
from ctxlayer.store import schema
from ctxlayer.store.closed import (
    checked_whole,
    closed_cleanly,
    met_damaged,
    note_clean_close,
    note_damaged,
)
from ctxlayer.store.conversations import ConversationRows
from ctxlayer.store.errors import FolderGone, StoreError, describe_store_error
from ctxlayer.store.paths import DB_NAME, state_dir
from ctxlayer.store.sessions import SessionRows

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("ctxlayer.store")

Durability = Literal["normal", "full"]

#: audit entries `forget` removes in one transaction
FORGET_CHUNK = 5000


def _has_json_each(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite has its JSON functions (built in since 3.38, an option before)."""
    try:
        conn.execute("SELECT count(*) FROM json_each('[]')").fetchone()
    except sqlite3.OperationalError:
        return False
    return True


#: how long an open or a write waits for another connection (another daemon) to let go
BUSY_TIMEOUT_MS = 5000


class _Damaged(sqlite3.DatabaseError):
    """The database failed its integrity check."""


def _damaged(err: sqlite3.DatabaseError) -> bool:
    """Whether ``err`` says the file is not a database SQLite can read (moved aside then):
    malformed, not a database, a failed check. Not a busy or locked one, a full disk or a
    read-only folder: the file is fine, and moving it aside lost another daemon's sessions
    (it went on writing the file it had open, under the new name)."""
    name = getattr(err, "sqlite_errorname", None) or ""
    return isinstance(err, _Damaged) or name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))


#: the file beside the database whose lock opens share and a move aside takes alone
OPENING_NAME = DB_NAME + ".opening"
#: how long an open waits for a move aside under way (or a move for the opens' checks)
OPENING_WAIT_S = 60.0


@contextlib.contextmanager
def _opening(directory: Path, *, alone: bool) -> Iterator[None]:
    """Hold the state folder's opening lock (flock), shared or ``alone``. None where there is
    no flock (Windows, which does not rename an open file), nor when its file cannot be made
    (a read-only folder: the open itself fails and says so)."""
    if fcntl is None:
        yield
        return
    try:
        fd = os.open(directory / OPENING_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield
        return
    try:
        # tried until the wait is over: a blocking flock waited forever on a stopped process
        deadline = time.monotonic() + OPENING_WAIT_S
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_EX if alone else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"{directory / DB_NAME} could not be opened: another process kept "
                        f"{OPENING_NAME} locked for {OPENING_WAIT_S:.0f} s while it opened "
                        "the database or moved a damaged one aside; try again") from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)  # the lock goes with it


def _write_ahead(conn: sqlite3.Connection) -> None:
    """WAL journal mode. Turning a new file to it takes the file alone, and SQLite answers
    busy at once there, without waiting (two opening one new file could wait on each other
    forever): tried again until BUSY_TIMEOUT_MS have passed."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            return
        except sqlite3.OperationalError as err:
            if getattr(err, "sqlite_errorname", "") != "SQLITE_BUSY" \
                    or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class SessionStore(SessionRows, ConversationRows):
    """The session database. ``recovered_from`` names the corrupt file moved aside, if any.
    The reads and writes of its rows are its mixins' (sessions.py, conversations.py)."""

    def __init__(self, directory: str | Path | None = None, *,
                 durability: Durability = "normal") -> None:
        folder = state_dir(directory)
        try:
            self.directory = make_private_dir(folder)
        except OSError as err:  # a file in its place, no permission, a read-only disk
            raise StoreError(str(unusable_folder(folder, err))) from err
        self.path = self.directory / DB_NAME
        self.durability = durability
        self.recovered_from: Path | None = None
        self.checked_at_open = True  # False: closed cleanly and untouched since (closed.py)
        #: the error with which SQLite first said the open file is damaged, None while it never
        #: did: no clean close is noted then, and the next open checks the file whole
        self.damaged: sqlite3.DatabaseError | None = None
        self._lock = threading.Lock()
        try:
            self._conn = self._open()
        except OSError as err:  # its file cannot be made or set private
            raise StoreError(f"{self.path} cannot be opened ({err.strerror})") from err
        except sqlite3.DatabaseError as err:  # busy, locked, a full disk: the file is left alone
            raise StoreError(f"{self.path} could not be opened: "
                             f"{describe_store_error(err)}") from err
        self._json_each = _has_json_each(self._conn)
        self._opened = self._identity()
        #: the FolderGone said, once it was found (every use after it fails the same way)
        self.gone: FolderGone | None = None

    def _identity(self) -> tuple[int, int] | None:
        """(device, inode) of the file at the database's path now, None when there is none."""
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return info.st_dev, info.st_ino

    def _still_there(self) -> None:
        """Fail when the file this connection writes is no longer the one at its path. SQLite
        goes on writing a deleted file, so after `rm -rf` of the state folder every write was
        answered as stored and lost at the next start (a second daemon started a new file
        meanwhile, and the two split apart). One stat a transaction: a few microseconds."""
        if self.gone is None and self._identity() == self._opened:
            return
        if self.gone is None:
            self.gone = FolderGone(
                f"the state folder {self.directory} was deleted or moved while ctxlayer ran "
                f"(its sessions database {self.path} is not the file this process opened): "
                "this change was not stored, and none will be until ctxlayer restarts (reload "
                "the editor window, restart the gateway), which starts a new database there")
            log.error("%s", self.gone)
        raise self.gone

    def gone_now(self) -> FolderGone | None:
        """The FolderGone a write would meet now, None while the file is still at its path."""
        try:
            self._still_there()
        except FolderGone as exc:
            return exc
        return None

    def set_durability(self, durability: Durability) -> None:
        """Commit every transaction to disk before returning ("full"), or at checkpoints."""
        with self._locked():
            self._conn.execute(f"PRAGMA synchronous={durability.upper()}")
            self.durability = durability

    # --- opening -------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        """The connection to the database, a damaged one moved aside first. Two processes
        finding it damaged together (editor windows restored at once) each moved "it" aside:
        one's rename found the file gone (a raw FileNotFoundError), one opened the -wal of
        the file being moved ("disk I/O error"), or one moved aside the fresh file the other
        had just made. So opens share the opening lock, a move aside takes it alone, and
        under it the file is opened again first: another process may have moved it already."""
        with _opening(self.directory, alone=False):
            try:
                return self._connect()
            except sqlite3.DatabaseError as err:
                if not _damaged(err):  # busy, locked, a full disk: the file is fine
                    raise
        with _opening(self.directory, alone=True):
            try:
                return self._connect()
            except sqlite3.DatabaseError as err:
                if not _damaged(err):
                    raise
                self.recovered_from = self._move_aside(err)
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        unchanged = closed_cleanly(self.path)  # taken away first: a crash from now on checks
        whole = met_damaged(self.path)  # a process met it damaged: every check SQLite has
        # 0600 before SQLite opens it: the conversations are the user's alone (SQLite gives
        # the -wal and -shm it creates the same mode; ones left by an older ctxlayer are set)
        for path in (self.path, *(self.path.with_name(DB_NAME + s) for s in ("-wal", "-shm"))):
            if path == self.path or path.exists():
                make_private_file(path)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            # first: another daemon on this state folder (a second editor window) may be
            # opening or writing it, and every step below waits for it rather than failing
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            _write_ahead(conn)
            conn.execute(f"PRAGMA synchronous={self.durability.upper()}")
            conn.execute("PRAGMA foreign_keys=ON")
            self.checked_at_open = not unchanged
            if self.checked_at_open:  # reads the whole file (store/closed.py)
                pragma = "integrity_check" if whole else "quick_check"
                check = conn.execute(f"PRAGMA {pragma}").fetchone()
                if not check or check[0] != "ok":
                    raise _Damaged(f"{pragma}: {check[0] if check else 'no answer'}")
                checked_whole(self.path)
            self._migrate(conn)
        except (sqlite3.DatabaseError, StoreError):
            conn.close()
            raise
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Bring the schema to this version, one step a transaction; the version is read
        again inside each (another process opening the same new folder may have taken the
        step meanwhile: both creating the tables was an error, and the file moved aside)."""
        while True:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > schema.VERSION:
                raise StoreError(
                    f"{self.path} has schema version {version}, newer than this ctxlayer "
                    f"understands ({schema.VERSION}); upgrade ctxlayer or set CTXLAYER_STATE_DIR"
                )
            if version == schema.VERSION:
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                if conn.execute("PRAGMA user_version").fetchone()[0] == version:
                    for statement in _statements(schema.MIGRATIONS[version]):
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version={version + 1}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _move_aside(self, err: Exception) -> Path:
        n = 1
        while (aside := self.path.with_name(f"{DB_NAME}.corrupt-{n}")).exists():
            n += 1
        self.path.rename(aside)
        for suffix in ("-wal", "-shm"):
            side = self.path.with_name(DB_NAME + suffix)
            if side.exists():
                side.rename(aside.with_name(aside.name + suffix))
        log.warning("session database %s is unreadable (%s); moved it to %s and started a "
                    "fresh one", self.path, err, aside)
        return aside

    def close(self) -> None:
        with self._lock:
            self._conn.close()
            # not ours when gone; met damaged: noted so, never as closed cleanly
            if self.gone is None and self.damaged is None and self._identity() == self._opened:
                note_clean_close(self.path)

    def _met(self, exc: BaseException | None) -> None:
        """Keep that SQLite said the file is damaged (once, in the log and in a note beside
        it): the clean close noted the damaged file, the next open left its check out, and
        every start failed as the one before, the file never moved aside."""
        if self.damaged is not None or not isinstance(exc, sqlite3.DatabaseError) \
                or not _damaged(exc):
            return
        self.damaged = exc
        if self.gone is None and self._identity() == self._opened:  # else not this file
            note_damaged(self.path, str(exc))
        log.error("session database %s is damaged (%s): it is moved aside when ctxlayer next "
                  "starts", self.path, exc)

    @property
    def schema_version(self) -> int:
        with self._locked():
            return self._conn.execute("PRAGMA user_version").fetchone()[0]

    def _tx(self) -> _Tx:
        """One transaction (BEGIN IMMEDIATE .. COMMIT) under the lock."""
        self._still_there()
        return _Tx(self, begin=True)

    def _locked(self) -> _Tx:
        """The connection under the lock, no transaction of its own (a read alone)."""
        return _Tx(self, begin=False)

    # --- forgetting (state/expiry.py) -----------------------------------------------------

    def forget(self, workspace: str, before: str) -> tuple[int, int]:
        """Remove the workspace's audit entries written before ``before`` (an ISO time, as the
        rows keep it) and the windows of its conversations last kept before it, its moved
        families older than it whose chat has no window left, and its answers named before it;
        (audit entries, windows) removed. Sessions, their messages, rules and working items stay."""
        audit = 0
        while True:  # a transaction a batch: a first run after months lets other writes in
            with self._tx() as c:
                # by time, not by session: SQLite's own plan walked every entry of the
                # workspace's sessions to find the few (most days none) that are old: 13.9 ms
                # for 100,000 entries and none to remove, 0.1 ms by time
                n = c.execute("DELETE FROM audit WHERE id IN (SELECT id FROM audit INDEXED BY "
                              "audit_by_time WHERE at < ? AND sid IN (SELECT sid FROM sessions "
                              "WHERE workspace = ?) LIMIT ?)",
                              (before, workspace, FORGET_CHUNK)).rowcount
            audit += n
            if n < FORGET_CHUNK:
                break
        with self._tx() as c:
            # by the time index: the rows keep their time after the body (schema 6)
            windows = c.execute("DELETE FROM conversations INDEXED BY conversations_by_time "
                                "WHERE workspace = ? AND updated_at < ?",
                                (workspace, before)).rowcount
            # a moved family goes with the last window of the family it went on in: moved long
            # ago, its chat may still go on (a few rows a workspace: no index)
            c.execute("DELETE FROM moved_families WHERE workspace = ? AND updated_at < ? AND "
                      "NOT EXISTS (SELECT 1 FROM conversations k WHERE k.workspace = "
                      "moved_families.workspace AND k.conversation_id >= target AND "
                      "k.conversation_id < target || '.' AND (k.conversation_id = target OR "
                      "substr(k.conversation_id, 1, length(target) + 1) = target || '-'))",
                      (workspace, before))
            c.execute("DELETE FROM answers WHERE workspace = ? AND updated_at < ?",
                      (workspace, before))
            # what a turn sent goes with its window (a chat's last turn is never older)
            c.execute("DELETE FROM sent INDEXED BY sent_by_time WHERE workspace = ? AND "
                      "updated_at < ?", (workspace, before))
        return audit, windows


def models_in_use(directory: str | Path | None = None) -> list[str]:
    """The models of the state folder's sessions (the gateway's chats open one each), the most
    recently updated first, read without opening the store (no check, no migration: a quick
    read-only look; [] when there is no database or it cannot be read)."""
    path = state_dir(directory) / DB_NAME
    if not path.exists():
        return []
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            rows = conn.execute("SELECT model FROM sessions ORDER BY updated_at DESC "
                                "LIMIT 100").fetchall()
        finally:
            conn.close()
    except (sqlite3.Error, ValueError):  # ValueError: a path no file URI names
        return []
    return list(dict.fromkeys(r[0] for r in rows if isinstance(r[0], str)))


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


class _Tx:
    """The store's connection under its lock: one transaction (BEGIN IMMEDIATE .. COMMIT,
    ROLLBACK on error) when ``begin``. An error saying the file is damaged is kept by the store
    (`SessionStore._met`)."""

    __slots__ = ("store", "begin")

    def __init__(self, store: SessionStore, begin: bool) -> None:
        self.store, self.begin = store, begin

    def __enter__(self) -> sqlite3.Connection:
        store = self.store
        store._lock.acquire()
        try:
            if self.begin:
                store._conn.execute("BEGIN IMMEDIATE")
        except BaseException as exc:
            store._lock.release()
            store._met(exc)
            raise
        return store._conn

    def __exit__(self, exc_type, exc, tb) -> None:
        store = self.store
        try:
            if self.begin:
                store._conn.execute("ROLLBACK" if exc_type else "COMMIT")
        except BaseException as err:
            store._lock.release()
            store._met(exc)
            store._met(err)
            raise
        store._lock.release()
        store._met(exc)
